//! The narration panel's lines in the rows it has: which give way, and what stands for them, when
//! not all fit (`narration.rs` builds them).

use super::narration::MORE_AFTER;
use ratatui::text::{Line, Span};

/// The panel's lines at some width: the narration, then the checks, then where the class is.
pub(super) struct Body {
    pub(super) lines: Vec<Line<'static>>,
    /// How many of `lines` are the narration's.
    pub(super) narration: usize,
    /// How many of those the class read before a question's answer (0 without one, or while it
    /// waits): where the panel is short, the text after the answer is the one to show.
    pub(super) read: usize,
    /// Which of `lines` are checks that held, and the one line that stands for them all where the
    /// panel is short of rows.
    pub(super) passed: Vec<usize>,
    pub(super) summary: Option<Line<'static>>,
    /// Lines after all of them that always show, the others giving way: an earlier step off the
    /// lesson's script, and "✎ exploring on your own" (at 80x24, after exploring by hand, the
    /// narration and its checks had stood over a changed text with that line cut).
    pub(super) pinned: Vec<Line<'static>>,
}

/// The panel's lines in `room` rows, and whether any was left out: all of them where they fit; else
/// without their blank lines (and the "(more after the answer)" note) and with the checks that held
/// in one line; else, while a question waits, the question and its choices whole and the narration
/// above them cut short with "…" (at 80x24 the attention lesson's choices 2 and 3 had been cut,
/// under a card that asked for "1 to 3"); else, once it is answered, the end of the text read before
/// the answer (its first line marked "…" where the mark fits), then the text after it and the checks,
/// as many as fit (at 80x24 the speed-of-light lesson's answer had been cut after its first two
/// lines, its checks unseen); else the first `room`. `width`: the columns inside.
pub(super) fn fitted(
    mut body: Body,
    (room, width): (usize, usize),
    asking: bool,
) -> (Vec<Line<'static>>, bool) {
    let pinned = std::mem::take(&mut body.pinned);
    let (mut shown, cut) = unpinned(body, (room.saturating_sub(pinned.len()), width), asking);
    shown.extend(pinned);
    shown.truncate(room);
    (shown, cut)
}

/// `fitted` for a body without pinned lines.
fn unpinned(body: Body, (room, width): (usize, usize), asking: bool) -> (Vec<Line<'static>>, bool) {
    let Body {
        mut lines,
        narration,
        read,
        passed,
        summary,
        ..
    } = body;
    if lines.len() <= room {
        return (lines, false);
    }
    let text = |l: &Line| {
        l.spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect::<String>()
    };
    let kept = |l: &Line| {
        let t = text(l);
        !t.trim().is_empty() && t.trim() != MORE_AFTER
    };
    // Short of rows, the checks that held say so in one line (the dice lesson's three checks of
    // " dog" had pushed the end of its narration off the panel); one that failed keeps its own.
    let needed = lines.iter().filter(|l| kept(l)).count();
    if let (true, Some(summary)) = (needed > room && passed.len() > 1, summary) {
        passed.iter().rev().for_each(|&i| drop(lines.remove(i)));
        lines.insert(passed[0], summary);
    }
    let mut rest = lines;
    let read = rest[..read.min(rest.len())]
        .iter()
        .filter(|l| kept(l))
        .count();
    let mut told: Vec<_> = rest
        .drain(..narration.min(rest.len()))
        .filter(kept)
        .collect();
    rest.retain(kept);
    if told.len() + rest.len() <= room {
        told.extend(rest);
        return (told, false);
    }
    if read > 0 && room > 0 {
        let mut shown = told.split_off((told.len() + rest.len() - room).min(read));
        // On a full line the mark would push its end past the border: the panel's title says it.
        if let Some(first) = shown.first_mut().filter(|l| l.width() + 2 <= width) {
            first.spans.insert(0, Span::raw("… "));
        }
        shown.extend(rest);
        shown.truncate(room);
        return (shown, true);
    }
    if asking && rest.len() < room {
        told.truncate(room - rest.len());
        if let Some(last) = told.last_mut() {
            // On a full line the mark would fall past the border: it takes the line's place.
            if last.width() + 2 > width {
                *last = Line::raw("…");
            } else {
                last.spans.push(Span::raw(" …"));
            }
        }
    }
    told.extend(rest);
    told.truncate(room);
    (told, true)
}
