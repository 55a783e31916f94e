//! What the A/B panel calls model B on its borders: the type a re-quantised B was asked for only when
//! its matrices really got it (a `q2_k` B whose rows do not fit q2_k's blocks is mostly q4_0, and says
//! so), and the engine's note on the types used, shortened until it fits the border.

use crate::protocol::AbView;
use unicode_width::UnicodeWidthStr;

/// The asked type's count of matrices, the total, and the other types with their counts (most first).
type Mixed = (usize, usize, Vec<(String, usize)>);

/// How a re-quantised B's matrices fell. `None` when every matrix got the asked type, or B is not a
/// re-quantised model.
fn mixed(ab: &AbView) -> Option<Mixed> {
    let types = ab.matrix_types.clone();
    let total: usize = types.iter().map(|t| t.1).sum();
    let asked = types.iter().find(|t| t.0 == ab.label).map_or(0, |t| t.1);
    let others: Vec<(String, usize)> = types.into_iter().filter(|t| t.0 != ab.label).collect();
    (!others.is_empty() && total > 0).then_some((asked, total, others))
}

/// The panel's title, the longest form that leaves `room` columns free: " Model B · q2_k ", or for a
/// B whose matrices fell back, " Model B · q2_k on 30 of 211 matrices, q4_0 on 181 "; `None` when
/// no form does.
pub fn title(ab: &AbView, width: usize, room: usize) -> Option<String> {
    let by = if ab.by_text { " · by text" } else { "" };
    let label = &ab.label;
    let forms: Vec<String> = match mixed(ab) {
        None => vec![
            format!(" Model B · {label}{by} "),
            format!(" B · {label}{by} "),
        ],
        Some((asked, total, others)) => {
            let rest: Vec<String> = others.iter().map(|(t, n)| format!("{t} on {n}")).collect();
            let main = &others[0].0;
            vec![
                format!(
                    " Model B · {label} on {asked} of {total} matrices, {} ",
                    rest.join(", ")
                ),
                format!(
                    " B · {label} on {asked}/{total} matrices, {} ",
                    rest.join(", ")
                ),
                format!(" B · {label} {asked}/{total}, {main} {} ", others[0].1),
                match asked * 2 < total {
                    true => format!(" B · mostly {main} "),
                    false => format!(" B · {label}, some {main} "),
                },
            ]
        }
    };
    forms.into_iter().find(|f| f.width() + room <= width)
}

/// The bottom border's note on the types used, the longest form that fits `width`; `None` without a
/// note.
pub fn footer(ab: &AbView, width: usize) -> Option<String> {
    let detail = ab.detail.as_ref()?;
    let mut forms = vec![format!(" {detail} ")];
    if let Some((asked, total, others)) = mixed(ab) {
        let fell: usize = others.iter().map(|t| t.1).sum();
        let to: Vec<&str> = others.iter().map(|t| t.0.as_str()).collect();
        let to = to.join("/");
        forms.push(format!(
            " {} of {total} matrices fell back to {to}: rows not a multiple of 256 ",
            fell
        ));
        forms.push(format!(
            " {fell}/{total} fell back to {to} (rows not ×256) "
        ));
        forms.push(format!(" {} {asked} · {to} {fell} ", ab.label));
    }
    Some(crate::fmt::first_fitting(&forms, width))
}

/// What B is, in a few words for a list header: its label ("q2_k", a file's name), or for a B whose
/// matrices mostly fell back, "mostly q4_0 (q2_k on 30/211)".
pub fn kind(ab: &AbView) -> String {
    match mixed(ab) {
        None => ab.label.clone(),
        Some((asked, total, others)) if asked * 2 < total => {
            format!("mostly {} ({} on {asked}/{total})", others[0].0, ab.label)
        }
        Some((asked, total, others)) => {
            format!("{} on {asked}/{total}, rest {}", ab.label, others[0].0)
        }
    }
}
