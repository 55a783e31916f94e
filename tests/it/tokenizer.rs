//! Tokenizer tests on the real model: round trips, byte tokens, special tokens, llama.cpp's prompt ids.

use crate::support;

use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::tokenizer::{StreamDecoder, Vocab};
use nexttoken::protocol::TokenKind;
use std::sync::OnceLock;

fn vocab() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        let g = GgufFile::open(&support::real_model()).expect("open model");
        Vocab::from_gguf(&g).expect("build vocab")
    })
}

fn round_trip(text: &str) -> Vec<u32> {
    let v = vocab();
    let ids = v.encode(text).expect("encode");
    assert_eq!(v.decode(&ids), text, "round trip of {text:?} via {ids:?}");
    // Streaming the same ids gives the same text, whatever the token boundaries.
    let mut s = StreamDecoder::new();
    let mut streamed: String = ids.iter().map(|&id| s.push(v, id)).collect();
    streamed.push_str(&s.flush());
    assert_eq!(streamed, text);
    ids
}

#[test]
fn round_trip_ascii() {
    let ids = round_trip("The quick brown fox jumps over the lazy dog.");
    assert!(
        ids.len() < 15,
        "ASCII words should be whole tokens: {ids:?}"
    );
}

#[test]
fn digits_are_single_tokens() {
    let v = vocab();
    let ids = round_trip("12345");
    assert_eq!(ids.len(), 5, "smollm splits digits individually: {ids:?}");
    let texts: Vec<String> = ids.iter().map(|&id| v.view(id).text).collect();
    assert_eq!(texts, ["1", "2", "3", "4", "5"]);
}

#[test]
fn round_trip_accents_cjk_emoji() {
    round_trip("Café crème, naïve façade, Ångström, Øresund");
    round_trip("日本語のテキストと中文");
    round_trip("family: 👩‍👩‍👧 done");
    round_trip("👩‍👩‍👧");
}

#[test]
fn round_trip_code() {
    round_trip("fn main() {\n    println!(\"{}\", x[0] + 42);\n}\n");
    round_trip("def f(x):\n\treturn x ** 2  # square\r\n");
}

#[test]
fn round_trip_spaces() {
    round_trip("  leading spaces");
    round_trip("trailing spaces   ");
    round_trip(" ");
    round_trip("\n\n  both \t ");
    assert!(vocab().encode("").expect("encode empty").is_empty());
}

#[test]
fn split_cjk_char_shows_bytes_and_streams_whole() {
    let v = vocab();
    // Rare CJK characters are not single tokens: their UTF-8 bytes are split across tokens.
    let text = "龘";
    let ids = v.encode(text).expect("encode");
    assert!(ids.len() > 1, "expected {text} to be split: {ids:?}");
    let views: Vec<_> = ids.iter().map(|&id| v.view(id)).collect();
    assert!(
        views.iter().all(|t| t.kind == TokenKind::Bytes),
        "{views:?}"
    );
    let shown: String = views.iter().map(|t| t.text.clone()).collect();
    assert!(shown.starts_with("<E9"), "{shown}");
    let mut s = StreamDecoder::new();
    for &id in &ids[..ids.len() - 1] {
        assert_eq!(s.push(v, id), "", "no partial character may come out");
    }
    assert!(!s.pending().is_empty());
    assert_eq!(s.push(v, ids[ids.len() - 1]), text);
    assert_eq!(s.flush(), "");
}

#[test]
fn partial_utf8_token_view_is_hex() {
    let v = vocab();
    // Find a token that is exactly the first two bytes of 日 (E6 97), as the example shows.
    let hit = (0..v.vocab_size() as u32).find(|&id| v.token_bytes(id) == [0xE6, 0x97]);
    let id = hit.expect("vocabulary has a token for bytes E6 97");
    let view = v.view(id);
    assert_eq!(view.text, "<E6 97>");
    assert_eq!(view.kind, TokenKind::Bytes);
}

#[test]
fn special_tokens_are_special_and_parsed() {
    let v = vocab();
    let ids = v
        .encode("<|im_start|>user\nHi<|im_end|>\n")
        .expect("encode");
    assert_eq!(ids[0], 1, "<|im_start|> is one id: {ids:?}");
    assert!(ids.contains(&2), "<|im_end|> is one id: {ids:?}");
    for id in [0u32, 1, 2] {
        assert!(v.is_special(id));
        assert_eq!(v.view(id).kind, TokenKind::Special);
    }
    assert_eq!(v.view(1).text, "<|im_start|>");
    assert!(!v.is_special(ids[1]));
    assert_eq!(v.view(ids[1]).kind, TokenKind::Text);
    assert_eq!(v.decode(&ids), "<|im_start|>user\nHi<|im_end|>\n");
}

#[test]
fn eos_bos_and_size() {
    let v = vocab();
    assert_eq!(v.vocab_size(), 49152);
    assert_eq!(v.bos_id(), Some(1));
    assert!(!v.adds_bos());
    assert_eq!(v.eos_ids()[0], 2, "eos_token_id comes first");
    assert!(
        v.eos_ids().contains(&0),
        "<|endoftext|> also ends: {:?}",
        v.eos_ids()
    );
    // Out of range never panics.
    assert_eq!(v.view(10_000_000).kind, TokenKind::Special);
    assert!(v.token_bytes(10_000_000).is_empty());
}

#[test]
fn search_ranks_exact_then_prefix_then_substring() {
    let v = vocab();
    let hits = v.search("Paris", 10, false);
    let texts: Vec<String> = hits.iter().map(|&id| v.view(id).text).collect();
    assert!(texts.len() >= 3, "{texts:?}");
    assert!(texts[..2].contains(&" Paris".to_string()), "{texts:?}");
    let first_prefix = texts
        .iter()
        .position(|t| t.trim_start().to_lowercase() != "paris");
    if let Some(i) = first_prefix {
        assert!(
            texts[i..]
                .iter()
                .all(|t| t.trim_start().to_lowercase() != "paris"),
            "{texts:?}"
        );
    }
    let lower = v.search("paris", 10, false);
    assert!(
        lower.iter().any(|&id| v.view(id).text == " Paris"),
        "case-insensitive"
    );
    assert!(v.search("", 10, false).is_empty());
    assert!(v.search("zzzzqqqqxxxx", 10, false).is_empty());
    let sub = v.search("aris", 50, false);
    assert!(
        sub.iter().any(|&id| v.view(id).text == " Paris"),
        "substring match"
    );
}

/// After a word the token with one leading space comes first, as a guess reads the word: "/the"
/// then enter after "is" had forced "the" ("is⚑the", rank #1610) where the class meant " the".
#[test]
fn after_a_word_the_search_puts_the_spaced_token_first() {
    let v = vocab();
    let text = |ids: Vec<u32>| v.view(ids[0]).text;
    assert_eq!(text(v.search("the", 10, true)), " the");
    assert_eq!(text(v.search("the", 10, false)), "the");
    assert_eq!(text(v.search("Paris", 10, true)), " Paris");
}

#[test]
fn reference_prompt_ids_match_llama_cpp() {
    let v = vocab();
    for name in ["P1", "P2", "P3"] {
        let json = support::reference(name);
        let prompt = json["prompt"].as_str().expect("prompt");
        let want: Vec<u32> = json["prompt_ids"]
            .as_array()
            .expect("prompt_ids")
            .iter()
            .map(|x| x.as_u64().expect("id") as u32)
            .collect();
        assert_eq!(
            v.encode(prompt).expect("encode"),
            want,
            "{name}: {prompt:?}"
        );
    }
}

#[test]
fn chat_template_of_the_real_model() {
    use nexttoken::engine::chat::{chat_template, render_chat};
    let g = GgufFile::open(&support::real_model()).expect("open model");
    let t = chat_template(&g).expect("SmolLM2 has a chat template");
    let out = render_chat(&t, "What is 2+2?", "<|im_start|>", "<|im_end|>").expect("render");
    assert_eq!(
        out,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    );
    let v = vocab();
    let ids = v.encode(&out).expect("encode");
    assert_eq!(ids[0], 1);
    assert_eq!(
        ids.iter().filter(|&&id| id == 1).count(),
        3,
        "three <|im_start|>: {ids:?}"
    );
    assert_eq!(
        ids.iter().filter(|&&id| id == 2).count(),
        2,
        "two <|im_end|>: {ids:?}"
    );
    assert_eq!(v.decode(&ids), out);
}

#[test]
fn stream_decoder_replaces_impossible_bytes_at_once() {
    let mut s = StreamDecoder::new();
    assert_eq!(s.push_bytes(b"a\xE6\x97"), "a");
    assert_eq!(s.pending(), b"\xE6\x97");
    // A byte that cannot continue the character: the broken prefix becomes U+FFFD, the rest flows on.
    assert_eq!(s.push_bytes(b"b"), "\u{FFFD}b");
    assert_eq!(s.push_bytes(b"\xF0\x9F"), "");
    assert_eq!(s.flush(), "\u{FFFD}");
    assert!(s.pending().is_empty());
}

#[test]
fn tokenizer_json_override_matches_the_gguf_tokenizer() {
    let v = vocab();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("tokenizer.json");
    v.save_tokenizer_json(&json).expect("save");
    let g = GgufFile::open(&support::real_model()).expect("open model");
    let w = Vocab::from_tokenizer_json(&json, &g).expect("load tokenizer.json");
    assert_eq!(w.vocab_size(), v.vocab_size());
    assert_eq!(w.eos_ids(), v.eos_ids());
    assert_eq!(w.bos_id(), v.bos_id());
    for id in 0..v.vocab_size() as u32 {
        assert_eq!(w.view(id), v.view(id));
        assert_eq!(w.token_bytes(id), v.token_bytes(id));
    }
    for text in [
        "<|im_start|>user\nThe capital of France is 12345 日本 👩‍👩‍👧<|im_end|>",
        "  x  ",
    ] {
        assert_eq!(w.encode(text).unwrap(), v.encode(text).unwrap(), "{text:?}");
    }
}

/// A byte token after a space (` <C3>`): the space is the text's own, marked `␣` as every other
/// token's is, while the bytes keep their inner space (`<E6 97>`).
#[test]
fn a_byte_tokens_leading_space_is_marked() {
    let v = vocab();
    let spaced = (0..v.vocab_size() as u32)
        .map(|id| v.view(id))
        .find(|t| t.kind == TokenKind::Bytes && t.text.starts_with(" <"))
        .expect("a byte token after a space");
    let q = nexttoken::fmt::quoted_token(&spaced);
    assert!(q.starts_with("⟨␣<") && q.ends_with(">⟩"), "{q}");
    let hit = (0..v.vocab_size() as u32).find(|&id| v.token_bytes(id) == [0xE6, 0x97]);
    assert_eq!(
        nexttoken::fmt::quoted_token(&v.view(hit.unwrap())),
        "⟨<E6 97>⟩"
    );
}
