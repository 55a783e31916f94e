//! The attention panel: the causal mask as a matrix (queries × keys) with real weights as a heat map,
//! what the drawn window leaves out, a legend, and what the newest token looks at most.

use super::attention_grid::{self as grid, Grid, GAP_MARK, MASK_MARK, WINDOW_MARK};
use super::theme::{Theme, HEAT_BLANK};
use crate::app::keymap::{pair_hint, Action, Mode};
use crate::app::{App, HeadSel};
use crate::fmt::{fit, pct, quoted_token};
use crate::protocol::{AttentionWindow, TokenRecord};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut hint = format!(
        " {} layer · {} head ",
        pair_hint(Mode::Normal, [Action::PrevLayer, Action::NextLayer]),
        pair_hint(Mode::Normal, [Action::PrevHead, Action::NextHead])
    );
    let keys = format!(
        "· {} keys ",
        pair_hint(Mode::Normal, [Action::OlderKeys, Action::NewerKeys])
    );
    if hint.width() + keys.width() + 4 <= area.width as usize {
        hint.push_str(&keys);
    }
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title(app, area.width as usize), theme.title))
        .title_bottom(Line::styled(hint, theme.dim).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if let Some(info) = super::served::info(app) {
        let line = super::served::cannot_show(info, "attention weights", theme);
        frame.render_widget(
            Paragraph::new(line).wrap(ratatui::widgets::Wrap { trim: false }),
            inner,
        );
        return;
    }
    let Some(session) = app.session.as_ref() else {
        return;
    };
    let lines = panel_lines(app, &session.attention, &session.tokens, inner, theme);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// " Attention · layer 1/2 · head mean ", or a shorter form when the border has no room for it. On a
/// model with sliding-window layers (Gemma 3) it says which kind the layer is: "layer 6/18 · local
/// (window 512)" or "layer 6/18 · global".
pub fn title(app: &App, width: usize) -> String {
    let n_layer = app.n_layer();
    if n_layer == 0 {
        return " Attention ".into();
    }
    let layer = app.focus.layer + 1;
    let (long, short) = match app.focus.head {
        HeadSel::Mean => ("head mean".to_string(), "mean".to_string()),
        HeadSel::Head(h) => (
            format!("head {}/{}", h + 1, app.n_head()),
            format!("h{}/{}", h + 1, app.n_head()),
        ),
    };
    // Only a model with both kinds of layer names the kind (every llama layer is global).
    let slides = app
        .model
        .as_ref()
        .is_some_and(|m| m.windows.iter().any(Option::is_some));
    let window = app.model.as_ref().and_then(|m| m.window(app.focus.layer));
    let (kind, kind_short) = match (slides, window) {
        (false, _) => (String::new(), String::new()),
        (true, Some(w)) => (format!(" · local (window {w})"), format!(" local {w}")),
        (true, None) => (" · global".to_string(), " global".to_string()),
    };
    let forms = [
        format!(" Attention · layer {layer}/{n_layer}{kind} · {long} "),
        format!(" Attention · L{layer}/{n_layer}{kind_short} · {short} "),
        format!(" Attn · L{layer}/{n_layer}{kind_short} · {short} "),
    ];
    let last = forms[forms.len() - 1].clone();
    forms
        .into_iter()
        .find(|f| f.width() + 2 <= width)
        .unwrap_or(last)
}

/// The matrix, a line on what it hides, the legend, and what the newest row looks at most. The last
/// line always shows; the matrix gives up rows down to three, then the legend goes, then the matrix.
fn panel_lines(
    app: &App,
    win: &AttentionWindow,
    tokens: &[TokenRecord],
    area: Rect,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if win.len == 0 || win.n_layer == 0 || !win.has_weights() {
        return vec![Line::styled("no attention yet", theme.dim)];
    }
    let (width, height) = (area.width as usize, area.height as usize);
    let scroll = app.focus.key_scroll;
    // A first fit to learn the cell size, which decides the legend; then the rows that are left.
    let Some(probe) = Grid::fit(win, width, height, scroll) else {
        return vec![Line::styled("too small for the matrix", theme.dim)];
    };
    let window = app
        .model
        .as_ref()
        .and_then(|m| m.window(grid::focus(app, win).0));
    let mut legend = legend(probe.numbers, window, width, theme);
    let hidden_lines = usize::from(probe.hidden > 0 || probe.newer > 0);
    // Short of rows, the legend gives way before the matrix: on a projector under a lesson's
    // narration the attention lesson's induction head had shown its one line and blank rows.
    let fit = |legend: usize| {
        Grid::fit(
            win,
            width,
            height.saturating_sub(legend + hidden_lines + 1),
            scroll,
        )
    };
    // The legend stays while the matrix keeps at least three query rows beside it (or all it
    // would have without it).
    let rows = |g: &Grid| g.len - g.first_row;
    // The bare fit only where the legend's leaves fewer than three rows.
    let g = match fit(legend.len()) {
        Some(g) if rows(&g) >= 3 => g,
        with => match (with, fit(0)) {
            (Some(g), Some(bare)) if rows(&g) >= rows(&bare) => g,
            (Some(g), None) => g,
            (_, Some(bare)) => {
                legend.clear();
                bare
            }
            (None, None) => return vec![top_attended(app, win, None, tokens, theme, width)],
        },
    };
    let mut lines = grid::key_labels(&g, tokens, theme);
    for r in g.first_row..g.len {
        lines.push(grid::query_row(app, &g, win, tokens, r, theme));
    }
    if g.hidden > 0 || g.newer > 0 {
        lines.push(hidden_line(app, &g, win, width, theme));
    }
    lines.extend(legend);
    if lines.len() + 2 <= height {
        lines.push(Line::default());
    }
    lines.push(top_attended(app, win, Some(&g), tokens, theme, width));
    lines
}

/// How far the key columns can scroll back in the attention panel as it is laid out now (for `update`,
/// which clamps the scroll with it). It depends on the width only.
pub fn max_key_scroll(app: &App) -> usize {
    let (Some(area), Some(session)) = (super::layout::areas(app).attention, app.session.as_ref())
    else {
        return 0;
    };
    let win = &session.attention;
    if win.len == 0 || !win.has_weights() {
        return 0;
    }
    let width = super::layout::inset(area).width as usize;
    Grid::fit(win, width, usize::MAX / 4, 0).map_or(0, |g| g.max_scroll)
}

/// What the drawn columns leave out, for the newest row: how many keys, older and (when scrolled back)
/// newer, and how much of its weight falls on them; and when the scroll has reached the oldest key the
/// report carries.
fn hidden_line(
    app: &App,
    g: &Grid,
    win: &AttentionWindow,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let w = pct(grid::hidden_weight(app, g, win, g.len - 1));
    let n = g.hidden;
    let keys = |n: usize| if n == 1 { "key" } else { "keys" };
    // Behind the first key's column the hidden run starts at 1, else at 0.
    let from = usize::from(g.sink);
    let to = from + n.max(1) - 1;
    let mark = if g.sink && n > 0 {
        format!("{GAP_MARK} ")
    } else {
        String::new()
    };
    let newer_key = crate::app::keymap::hint_key(Mode::Normal, Action::NewerKeys);
    let forms = if g.newer == 0 {
        vec![
            format!(
                "{mark}{n} older {} not drawn (positions {from}–{to}) get {w} of ▶'s attention",
                keys(n)
            ),
            format!(
                "{mark}{n} {} not drawn ({from}–{to}): {w} of ▶'s attention",
                keys(n)
            ),
            format!("{mark}{n} {} hidden: {w} of row ▶", keys(n)),
        ]
    } else {
        // Scrolled back: the end of the window is said, with the key that goes back to the newest,
        // and what ▶ gives the keys on either side of the drawn ones.
        let end = if g.newer < g.max_scroll {
            String::new()
        } else if win.start > 1 {
            format!(
                " · oldest key carried (the report holds {} positions)",
                win.len
            )
        } else {
            " · back to the first key".to_string()
        };
        let end_short = if end.is_empty() { "" } else { " · end" };
        let row = g.len - 1;
        let wo = pct(grid::older_weight(app, g, win, row));
        let wn = pct(grid::newer_weight(app, g, win, row).unwrap_or(0.0));
        let m = g.newer;
        vec![
            format!(
                "{mark}{n} older {} get {wo}, {m} newer {} {GAP_MARK} get {wn} of ▶'s attention{end} · {newer_key} newer",
                keys(n),
                keys(m)
            ),
            format!("{mark}{n} older {wo}, {m} newer {GAP_MARK} {wn} of ▶'s{end}"),
            format!("{n} older {wo}, {m} newer {wn}{end_short}"),
            format!("{n}+{m} hidden{end_short}"),
        ]
    };
    let text = forms
        .iter()
        .find(|f| f.width() < width)
        .unwrap_or(&forms[forms.len() - 1]);
    Line::styled(fit(&format!(" {text}"), width), theme.dim)
}

/// What the cells mean: numbers are weights in %, shades a heat scale where blank is below the first
/// shade; `·` is the causal mask, and on a sliding-window layer `×` the keys outside its window.
/// Wrapped to `width` between items.
fn legend(numbers: bool, window: Option<usize>, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut items: Vec<Vec<Span<'static>>> = vec![];
    if numbers {
        items.push(vec![Span::styled("weights in %", theme.dim)]);
    } else {
        items.push(vec![
            Span::styled("░▒▓█", theme.heat(0.6).1),
            Span::styled(" weight", theme.dim),
        ]);
        items.push(vec![Span::styled(
            format!("blank <{}", pct(HEAT_BLANK)),
            theme.dim,
        )]);
    }
    items.push(vec![
        Span::styled(MASK_MARK, theme.blocked),
        Span::styled(" masked (future)", theme.dim),
    ]);
    if let Some(w) = window {
        items.push(vec![
            Span::styled(WINDOW_MARK, theme.blocked),
            Span::styled(format!(" outside its window of {w} keys"), theme.dim),
        ]);
    }
    let mut lines = vec![];
    let mut line: Vec<Span<'static>> = vec![];
    let mut used = 0;
    for item in items {
        let w: usize = item.iter().map(|s| s.content.width()).sum();
        if used + 3 + w > width && !line.is_empty() {
            lines.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        let sep = if used == 0 { " " } else { " · " };
        used += sep.width() + w;
        line.push(Span::styled(sep, theme.dim));
        line.extend(item);
    }
    lines.push(Line::from(line));
    lines
}

/// "▶ ⟨␣is⟩ looks most at ⟨The⟩ 41% · …" for the newest row, over every key whose weight is known: the
/// window's and the first key's. A key the matrix `g` has no column for says so ("(not drawn)", or `┆`
/// when short of room), so a class does not look for a column that is not there.
fn top_attended(
    app: &App,
    win: &AttentionWindow,
    g: Option<&Grid>,
    tokens: &[TokenRecord],
    theme: &Theme,
    width: usize,
) -> Line<'static> {
    let row = win.len - 1;
    let mut keys: Vec<usize> = (0..=row).map(|c| win.start + c).collect();
    if win.start > 0 && grid::knows_first(win) {
        keys.insert(0, 0);
    }
    let mut weights: Vec<(usize, f32)> = keys
        .into_iter()
        .map(|k| (k, grid::weight(app, win, row, k)))
        .collect();
    weights.sort_by(|a, b| b.1.total_cmp(&a.1));
    let text_of = |pos: usize| {
        tokens
            .get(pos)
            .map_or(String::new(), |t| quoted_token(&t.token))
    };
    // The first item's token gives way before its figure does: "21.…" had lost its unit.
    let token_room = width.saturating_sub(" ▶ most at  100.0% ┆".width());
    let item = |k: usize, w: f32, long: bool| {
        let mark = match (g.is_some_and(|g| !g.draws(k)), long) {
            (false, _) => "",
            (true, true) => " (not drawn)",
            (true, false) => " ┆",
        };
        let token = crate::fmt::fit_quoted(&text_of(k), token_room.max(4));
        format!("{token} {}{mark}", pct(w))
    };
    // Whole items only: as many of the top three as the width allows.
    let line = |long: bool| {
        let first = weights
            .first()
            .map_or(0, |&(k, w)| item(k, w, long).width() + 1);
        let mut text = format!(" ▶ {} looks most at", text_of(win.start + row));
        // The ▶ marks the row; its token can go, then the verb.
        for shorter in [" ▶ looks most at", " ▶ most at"] {
            if text.width() + first > width {
                text = shorter.into();
            }
        }
        let mut items = 0;
        for (i, &(k, w)) in weights.iter().take(3).enumerate() {
            let it = format!("{}{}", if i == 0 { " " } else { " · " }, item(k, w, long));
            if i > 0 && text.width() + it.width() > width {
                break;
            }
            text.push_str(&it);
            items += 1;
        }
        (text, items)
    };
    let ((long, n_long), (short, n_short)) = (line(true), line(false));
    let text = if n_long >= n_short && long.width() <= width {
        long
    } else {
        short
    };
    Line::styled(fit(&text, width), theme.newest)
}
