//! What the panels say about a served model (`--server`): the one line a panel shows in place of what a
//! server cannot give (attention, the logit lens, the head map), how much probability the K known
//! candidates cover, and the last request's times, labelled as time across a network.

use super::theme::Theme;
use crate::app::App;
use crate::fmt::{ms, pct};
use crate::protocol::{Distribution, PassReport, ServedInfo};
use ratatui::text::Line;

/// The server, when the app steps a served model.
pub fn info(app: &App) -> Option<&ServedInfo> {
    app.model.as_ref().and_then(|m| m.served.as_ref())
}

/// The one line a panel shows instead of what a served model cannot give.
pub fn cannot_show(info: &ServedInfo, what: &str, theme: &Theme) -> Line<'static> {
    Line::styled(
        format!(
            "a served model cannot show {what}: {} returns only the top {} log-probabilities of each step, not what happens inside the pass. Run the model locally (--model) to see it.",
            info.kind, info.top_k
        ),
        theme.dim,
    )
}

/// The distribution panel's footer for a served row: how much mass the K known candidates cover.
pub fn mass_line(info: &ServedInfo, dist: &Distribution, chain: bool) -> String {
    let mass = dist.known_mass.unwrap_or(0.0);
    if chain {
        format!(
            " the chain runs on the top {} only: they cover {}, the rest is unknown ",
            info.top_k,
            pct(mass)
        )
    } else {
        format!(
            " top {} from the server cover {} · the tail is unknown ",
            info.top_k,
            pct(mass)
        )
    }
}

/// The timing panel's lines for a served step: the request across the network, and the server's own
/// prompt and generation times where it reports them.
pub fn timing_lines(pass: &PassReport, theme: &Theme) -> Vec<Line<'static>> {
    let Some(t) = &pass.served else {
        return vec![];
    };
    let mut server = vec![];
    if let Some(p) = t.prompt_ms {
        let n = t
            .prompt_n
            .map(|n| format!(" ({n} tok)"))
            .unwrap_or_default();
        server.push(format!("prompt {}{n}", ms(p)));
    }
    if let Some(g) = t.predicted_ms {
        server.push(format!("generate {}", ms(g)));
    }
    let mut lines = vec![Line::styled(
        format!(
            "last request {} across the network, not compute alone",
            ms(t.request_ms)
        ),
        theme.info,
    )];
    if !server.is_empty() {
        lines.push(Line::styled(
            format!("server's own times: {}", server.join(" · ")),
            theme.dim,
        ));
    }
    lines
}
