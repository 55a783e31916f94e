//! Models made from a loaded one: an early exit that reads its weights (a speculative draft), a
//! re-quantised draft's decode plan, and another MLP gate for a comparison with candle.

use super::Model;
use crate::engine::forward::block::Activation;
use crate::engine::forward::kv_cache::KvCache;
use crate::engine::forward::spare_rows::SpareRows;
use std::sync::Arc;

impl Model {
    /// Gates every MLP with `activation` instead of the architecture's own. Only for comparing with
    /// candle-transformers' `quantized_gemma3`, which gates Gemma 3 with SiLU (huggingface/candle#3745)
    /// where the model, llama.cpp and we use GELU.
    #[doc(hidden)]
    pub fn with_activation(mut self, activation: Activation) -> Self {
        Arc::get_mut(&mut self.weights)
            .expect("set before the weights are shared")
            .layers
            .iter_mut()
            .for_each(|l| l.activation = activation);
        self
    }

    /// The first `n` layers, then the final norm and the output head: the model stopped early, as the
    /// logit lens reads it after layer `n` (a speculative draft, `engine/draft.rs`). It reads this
    /// model's own weights (`Weights`), with a KV cache of its own, and starts from the decode plan
    /// this model's trial chose.
    pub fn early_exit(&self, n: usize) -> Model {
        let n = n.clamp(1, self.config.n_layer);
        let mut config = self.config.clone();
        config.n_layer = n;
        let cache = KvCache::new(n, config.n_kv_head, config.head_dim, config.context_length)
            .with_precision(self.cache.precision());
        Model {
            config,
            vocab_size: self.vocab_size,
            weights: Arc::clone(&self.weights),
            rope: self.rope.clone(),
            rope_local: self.rope_local.clone(),
            cache,
            forward_passes: 0,
            decode: self.decode.for_same_shapes(),
            spare: SpareRows::new(self.vocab_size),
        }
    }

    /// Starts this model's decode plan from `other`'s choice (`DecodePlan::for_same_shapes`): `other`
    /// is the model this one was re-quantised from.
    pub fn start_from_plan_of(&mut self, other: &Model) {
        self.decode = other.decode.for_same_shapes();
    }

    /// Whether `other` reads the very same weights in memory (an early exit of this model, or this
    /// model of one).
    pub fn shares_weights(&self, other: &Model) -> bool {
        Arc::ptr_eq(&self.weights, &other.weights)
    }
}
