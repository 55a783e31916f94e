//! Looking inside one forward pass: the logit lens and the map of every head.

use super::TokenView;
pub use crate::analysis::HeadScore;
use serde::{Deserialize, Serialize};

/// One token of a lens layer's top list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LensToken {
    pub token: TokenView,
    pub p: f32,
}

/// What the model would predict if it stopped after one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LensLayer {
    pub layer: usize,
    /// The most likely tokens at this layer, best first.
    pub top: Vec<LensToken>,
    /// The finally chosen token's 0-based rank and probability at this layer.
    pub chosen_rank: usize,
    pub chosen_p: f32,
}

/// The logit lens at one position: the final norm and the output head applied to each layer's
/// residual stream. Its last layer is the model's own next-token distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogitLens {
    /// The query position whose next token the layers predict.
    pub position: usize,
    /// The token the lens follows through the layers (the one finally chosen or planned).
    pub chosen: TokenView,
    pub layers: Vec<LensLayer>,
}

/// Every head's scores at one query position: `scores[layer][head]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadMap {
    pub position: usize,
    pub scores: Vec<Vec<HeadScore>>,
}

/// One inspection of the tip: the lens, the head map, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    pub lens: Option<LogitLens>,
    pub heads: Option<HeadMap>,
    /// Forward passes since load, the inspection's own included: the status bar's count moves with
    /// the pass it ran, not a step later.
    #[serde(default)]
    pub forward_passes: u64,
}
