//! Claims about the newest position's attention in one layer and head. Layers and heads are 0-based
//! here and named from 1 in every message, as on screen and in the lesson file.

use super::Checks;
use crate::engine::session::Session;
use crate::protocol::lesson::expect::AttentionExpect;
use crate::protocol::AttentionWindow;

/// Checks `previous_above`, `first_above`, `copy_above` and `causal` for the head `a` names.
pub(super) fn check(
    session: &Session,
    a: &AttentionExpect,
    tokens: &[u32],
    window: &AttentionWindow,
    out: &mut Checks,
) -> Result<(), String> {
    let rows = session
        .newest_attention()
        .ok_or("no forward pass yet: read a prompt first")?;
    let (layers, heads) = (window.n_layer, window.n_head);
    if a.layer >= layers || a.head >= heads {
        return Err(format!(
            "layer {} head {}: the model has layers 1 to {layers} and heads 1 to {heads}",
            a.layer + 1,
            a.head + 1,
        ));
    }
    let row = &rows.rows[a.layer][a.head];
    let q = rows.query_position;
    let name = format!("layer {} head {}", a.layer + 1, a.head + 1);
    if let Some(x) = a.previous_above {
        let w = if q > 0 { row[q - 1] as f64 } else { 0.0 };
        let seen = format!("{name}: weight {w:.3} on the previous token");
        out.push(format!("{name} previous > {x}"), seen, w > x);
    }
    if let Some(x) = a.first_above {
        let w = row.first().copied().unwrap_or(0.0) as f64;
        let seen = format!("{name}: weight {w:.3} on the first token");
        out.push(format!("{name} first > {x}"), seen, w > x);
    }
    if let Some(x) = a.copy_above {
        // Keys just after an earlier copy of the newest token: where an induction head looks.
        let cur = tokens.get(q).copied();
        let w: f64 = (0..q)
            .filter(|&j| Some(tokens[j]) == cur && j + 1 < q)
            .map(|j| row[j + 1] as f64)
            .sum();
        let seen = format!("{name}: weight {w:.3} on the tokens after earlier copies");
        out.push(format!("{name} copy > {x}"), seen, w > x);
    }
    if let Some(want) = a.causal {
        let mut future = 0.0f64;
        for r in 0..window.len {
            for c in r + 1..window.len {
                future += window.get(a.layer, a.head, r, c) as f64;
            }
        }
        let ok = (future == 0.0) == want;
        let seen = format!("{name}: total weight {future} on later positions");
        out.push(format!("{name} causal {want}"), seen, ok);
    }
    Ok(())
}
