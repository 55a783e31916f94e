//! A session to and from a `SavedSession` (`engine/session_file.rs`, `docs/SESSIONS.md`): the tree with
//! its records, pass timings and each generated token's top candidates; restoring rebuilds the tree and
//! re-feeds the current path so the next step is the one the saved session would take.

use super::{Node, Session, SessionError, ATTENTION_KEEP};
use crate::engine::sampler;
use crate::engine::session_file::{
    SavedCandidate, SavedChoice, SavedModel, SavedNode, SavedSession, SessionFileError as Error,
    FORMAT, VERSION,
};
use crate::protocol::Source;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// What a session keeps only to be saved: its files, the prompt as typed, and the top candidates a
/// loaded file brought (a loaded node has no logits to compute them from).
#[derive(Default)]
pub(super) struct SaveState {
    model_file: Option<PathBuf>,
    tokenizer: Option<PathBuf>,
    sha256: OnceLock<String>,
    /// The prompt as typed, the chat flag, and the ids it became.
    prompt: Option<(String, bool, Vec<u32>)>,
    /// node id -> (token, parent, top candidates), from the last file loaded.
    loaded: HashMap<usize, (u32, Option<usize>, SavedChoice)>,
    /// The class's answers the last file loaded kept, for the app to take back (`SessionView::answers`).
    answers: Vec<crate::protocol::ClassAnswer>,
}

type Result<T> = std::result::Result<T, Error>;

impl Session {
    /// The model's file, when the session was loaded from one.
    pub fn model_file(&self) -> Option<PathBuf> {
        self.save.model_file.clone()
    }

    /// The files this session runs on, recorded in a saved session (`load_session` calls this).
    pub fn set_model_file(&mut self, model: &Path, tokenizer: Option<&Path>) {
        self.save = SaveState {
            model_file: Some(model.to_path_buf()),
            tokenizer: tokenizer.map(Path::to_path_buf),
            ..SaveState::default()
        };
    }

    /// Remembers the prompt as typed for the tree just prefilled from it (a saved session records it).
    pub fn note_prompt(&mut self, prompt: &str, chat: bool) {
        let ids = self.tokens()[..self.prompt_len].to_vec();
        self.save.prompt = Some((prompt.to_string(), chat, ids));
        self.save.loaded.clear();
        self.save.answers.clear();
    }

    /// The class's answers the session file this tree was loaded from kept (empty after a new prompt).
    pub fn loaded_answers(&self) -> &[crate::protocol::ClassAnswer] {
        &self.save.answers
    }

    /// The prompt as typed and its chat flag, when it is the one the current tree was read from.
    pub fn typed_prompt(&self) -> Option<(String, bool)> {
        let ids = &self.tokens()[..self.prompt_len];
        match &self.save.prompt {
            Some((p, chat, noted)) if noted.as_slice() == ids => Some((p.clone(), *chat)),
            _ => None,
        }
    }

    /// The bytes of the model's file (0 without one): what the speed of light's probe reads as many of.
    pub fn model_file_bytes(&self) -> u64 {
        let file = self.save.model_file.as_deref();
        file.map_or(0, crate::engine::machine::file_bytes)
    }

    /// The model file's sha256 (hashed once, ~0.3 s for 96 MB).
    pub fn model_sha256(&self) -> Result<String> {
        let path = self.save.model_file.as_ref().ok_or(Error::NoModelFile)?;
        if let Some(s) = self.save.sha256.get() {
            return Ok(s.clone());
        }
        let s =
            crate::engine::fetch::sha256_file(path).map_err(|e| Error::Hash(format!("{e:#}")))?;
        Ok(self.save.sha256.get_or_init(|| s).clone())
    }

    /// The whole session as a file's contents.
    pub fn to_saved(&self) -> Result<SavedSession> {
        if self.path.is_empty() {
            return Err(Error::NothingToSave);
        }
        let model_file = self.save.model_file.as_ref().ok_or(Error::NoModelFile)?;
        let sha256 = self.model_sha256()?;
        let bytes = self.model_file_bytes();
        let prompt_ids: Vec<u32> = self.nodes[..self.prompt_len]
            .iter()
            .map(|n| n.token)
            .collect();
        let (prompt, chat) = match &self.save.prompt {
            Some((p, chat, ids)) if *ids == prompt_ids => (p.clone(), *chat),
            _ => (self.vocab.decode(&prompt_ids), false),
        };
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(id, n)| SavedNode {
                id,
                token: n.token,
                parent: n.parent,
                record: n.record.clone(),
                pass: n.pass,
                chosen_from: self.chosen_from(id),
                settings: n
                    .settings
                    .as_deref()
                    .filter(|&s| *s != self.settings)
                    .cloned(),
            })
            .collect();
        Ok(SavedSession {
            format: FORMAT.into(),
            version: VERSION,
            saved_by: format!("nexttoken {}", env!("CARGO_PKG_VERSION")),
            model: SavedModel {
                file: model_file
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                sha256,
                bytes,
            },
            tokenizer: self
                .save
                .tokenizer
                .as_ref()
                .map_or("gguf".into(), |t| t.display().to_string()),
            settings: self.settings.clone(),
            prompt,
            chat,
            prompt_len: self.prompt_len,
            prefill: self.prefill.clone(),
            current: *self.path.last().expect("not empty"),
            nodes,
            answers: Vec::new(),
            rounds: self.round_log.clone(),
            machine: self.machine.clone(),
        })
    }

    /// A generated node's top candidates: from its parent's logits, or from the file it was loaded from.
    fn chosen_from(&self, id: usize) -> Option<SavedChoice> {
        let node = &self.nodes[id];
        if node.record.source == Source::Prompt {
            return None;
        }
        let parent = node.parent?;
        if let Some(logits) = &self.nodes[parent].logits {
            let (lse, _) = sampler::lse_entropy(logits);
            let top_k = sampler::top_n(logits, self.opts.top_k_shown)
                .into_iter()
                .map(|t| SavedCandidate {
                    token: self.vocab.view(t),
                    prob: (logits[t as usize] - lse).exp(),
                    logprob: logits[t as usize] - lse,
                    rank: sampler::rank_of(logits, t),
                })
                .collect();
            return Some(SavedChoice { top_k });
        }
        match self.save.loaded.get(&id) {
            Some((t, p, choice)) if *t == node.token && *p == node.parent => Some(choice.clone()),
            _ => None,
        }
    }

    /// Checks that `saved` was made with this model: an error when the sha256 differs, unless
    /// `ignore_model_mismatch`, then the warning to show.
    pub fn check_model(
        &self,
        saved: &SavedSession,
        ignore_model_mismatch: bool,
    ) -> Result<Option<String>> {
        let loaded = self.model_sha256().unwrap_or_else(|_| "unknown".into());
        if loaded.eq_ignore_ascii_case(&saved.model.sha256) {
            return Ok(None);
        }
        let mismatch = Error::ModelMismatch {
            file: saved.model.file.clone(),
            saved: saved.model.sha256.clone(),
            loaded_file: self
                .save
                .model_file
                .as_deref()
                .map_or_else(|| "unknown".into(), crate::engine::session_file::file_name),
            loaded,
        };
        if ignore_model_mismatch {
            Ok(Some(format!("warning: {mismatch} (ignored)")))
        } else {
            Err(mismatch)
        }
    }

    /// Replaces this session with a saved one: checks the model (see `check_model`) and that the tree
    /// fits it, rebuilds the tree, then re-feeds the current path in one prefill so the next step is
    /// the one the saved session would take. All or nothing: on failure the session is as it was.
    /// Returns the model-mismatch warning, if any.
    pub fn restore_saved(
        &mut self,
        saved: &SavedSession,
        ignore_model_mismatch: bool,
    ) -> Result<Option<String>> {
        let warning = self.check_model(saved, ignore_model_mismatch)?;
        self.check_fits(saved)?;
        let old_nodes = std::mem::take(&mut self.nodes);
        let old_settings = std::mem::replace(&mut self.settings, saved.settings.clone());
        let result = self.atomically(|s| s.rebuild(saved));
        if let Err(e) = result {
            // `atomically` dropped what the rebuild added (its checkpoint saw an empty tree).
            self.nodes = old_nodes;
            self.settings = old_settings;
            return Err(e.into());
        }
        let prompt_ids = self.tokens()[..self.prompt_len].to_vec();
        self.save.prompt = Some((saved.prompt.clone(), saved.chat, prompt_ids));
        self.save.loaded = saved
            .nodes
            .iter()
            .filter_map(|n| Some((n.id, (n.token, n.parent, n.chosen_from.clone()?))))
            .collect();
        self.save.answers = saved.answers.clone();
        self.round_log = saved.rounds.clone();
        if self.machine.is_none() {
            self.machine = saved.machine.clone();
        }
        Ok(warning)
    }

    fn check_fits(&self, saved: &SavedSession) -> Result<()> {
        let unfit = |s: String| Err(Error::DoesNotFit(s));
        if let Err(e) = crate::engine::session_file::check_shape(saved) {
            return unfit(e);
        }
        let vocab = self.model.vocab_size();
        if let Some(n) = saved.nodes.iter().find(|n| n.token as usize >= vocab) {
            return unfit(format!(
                "token id {} is not in this model's vocabulary of {vocab}",
                n.token
            ));
        }
        let mut depth = 1;
        let mut at = saved.current;
        while let Some(p) = saved.nodes[at].parent {
            (depth, at) = (depth + 1, p);
        }
        let context = self.model.config().context_length;
        if depth > context {
            return unfit(format!(
                "its current path is {depth} tokens, and this model's context holds {context}"
            ));
        }
        Ok(())
    }

    /// The body of `restore`, inside an edit (the old tree is already moved out).
    fn rebuild(&mut self, saved: &SavedSession) -> super::Result<()> {
        self.with_logits.clear();
        self.path.clear();
        self.fed = 0;
        self.fed_floor = 0;
        self.chain_memo = None;
        for n in &saved.nodes {
            let mut node = Node::new(n.token, n.parent, n.record.clone());
            node.pass = n.pass;
            let by_sampler =
                !matches!(n.record.source, Source::Prompt) && !n.record.source.by_hand();
            node.settings = by_sampler.then(|| Arc::new(saved.settings_of(n.id).clone()));
            self.nodes.push(node);
            if let Some(p) = n.parent {
                self.nodes[p].children.push(n.id);
            }
        }
        self.prompt_len = saved.prompt_len;
        self.path = self.path_to(saved.current);
        if self.path.len() < self.prompt_len {
            return Err(SessionError::Internal(
                "the current path ends in the prompt".into(),
            ));
        }
        // Chunks of at most ATTENTION_KEEP keep every position's attention row; the prompt's end is a
        // chunk's end, so its logits are kept as a fresh prefill keeps them.
        let chunk = if self.opts.kv_cache {
            self.opts.prefill_chunk.clamp(1, ATTENTION_KEEP)
        } else {
            usize::MAX
        };
        let mut done = 0;
        for end in [self.prompt_len, self.path.len()] {
            while done < end {
                done = done.saturating_add(chunk).min(end);
                self.feed_to(done)?;
            }
        }
        self.prefill = saved.prefill.clone();
        self.chain()?;
        Ok(())
    }
}
