//! Golden tests: the real model against llama.cpp's outputs on the same file (../shared/reference).
//! Tolerances follow the reference README: 8-bit activation rounding differs slightly between the two.

mod support;

use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, Session, SessionOptions};
use nexttoken::protocol::SamplerSettings;

fn greedy_session() -> Session {
    let settings = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    let opts = SessionOptions {
        top_k_shown: 10,
        ..SessionOptions::default()
    };
    load_session(
        &support::real_model(),
        &LoadOptions::default(),
        settings,
        opts,
        &mut |_| {},
    )
    .unwrap()
    .0
}

fn check(name: &str) {
    let r = support::reference(name);
    let mut s = greedy_session();
    let prompt = r["prompt"].as_str().unwrap();
    let want_ids = support::ids(&r["prompt_ids"]);
    assert_eq!(
        s.vocab.encode(prompt).unwrap(),
        want_ids,
        "{name}: prompt token ids"
    );
    s.prefill_ids(&want_ids).unwrap();

    let d = s.distribution().unwrap();
    let top10 = r["top10"].as_array().unwrap();
    let ref_ids: Vec<u32> = top10
        .iter()
        .map(|e| e[0].as_u64().unwrap() as u32)
        .collect();
    let ours: Vec<u32> = d.candidates.iter().map(|c| c.token.id).collect();
    assert_eq!(ours[0], ref_ids[0], "{name}: top-1");
    let overlap = ours[..5]
        .iter()
        .filter(|id| ref_ids[..5].contains(id))
        .count();
    assert!(
        overlap >= 4,
        "{name}: top-5 overlap {overlap}: ours {:?} vs {:?}",
        &ours[..5],
        &ref_ids[..5]
    );
    for e in &top10[..5] {
        let id = e[0].as_u64().unwrap() as u32;
        let want = e[2].as_f64().unwrap() as f32;
        let got = s
            .distribution()
            .unwrap()
            .candidates
            .iter()
            .find(|c| c.token.id == id)
            .map(|c| c.prob);
        let got = got
            .unwrap_or_else(|| panic!("{name}: reference top-5 id {id} missing from our top-10"));
        assert!(
            (got - want).abs() <= 0.03,
            "{name}: p({id}) = {got}, llama.cpp {want}"
        );
    }

    let greedy = support::ids(&r["greedy_ids"]);
    let ours: Vec<u32> = (0..greedy.len())
        .map(|_| s.step(Choice::Sample).unwrap().committed.token.id)
        .collect();
    let agree = ours.iter().zip(&greedy).take_while(|(a, b)| a == b).count();
    eprintln!(
        "{name}: greedy agrees with llama.cpp for {agree} of {} tokens",
        greedy.len()
    );
    assert!(
        agree >= 16,
        "{name}: greedy ids agree for only {agree} tokens\n ours {ours:?}\n ref  {greedy:?}"
    );
}

#[test]
fn p1_capital_of_france() {
    check("P1");
}

#[test]
fn p2_once_upon_a_time() {
    check("P2");
}

#[test]
fn p3_counting() {
    check("P3");
}

#[test]
fn paris_is_the_first_choice_with_probability_near_llama_cpp() {
    let mut s = greedy_session();
    s.prefill_text("The capital of France is", false).unwrap();
    let d = s.distribution().unwrap();
    assert_eq!(d.candidates[0].token.text, " Paris");
    assert!(
        (d.candidates[0].prob - 0.78).abs() < 0.03,
        "p(Paris) = {}",
        d.candidates[0].prob
    );
}
