//! `nexttoken export` (`docs/EXPORT.md`): snapshots of the Markdown and HTML handouts of a real session
//! (`tests/fixtures/`), the forced marks, escaping, a self-contained page, branch totals and timings
//! recomputed here from the JSON, the command line that repeats each path run on the real model, and a
//! clear message for each bad input.

use crate::support;

use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, SessionOptions};
use nexttoken::engine::session_file::{self, SavedSession};
use nexttoken::export::facts::{self, Handout};
use nexttoken::export::{render, render_with_model, Format};
use nexttoken::protocol::{SamplerSettings, Source};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURE: &str = "handout-session.json";

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(FIXTURE)
}

fn fixture() -> SavedSession {
    session_file::read(&fixture_path()).expect("the fixture reads")
}

/// The fixture as plain JSON, read apart from the crate's types.
fn fixture_json() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_path()).unwrap()).unwrap()
}

fn export(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .arg("export")
        .args(args)
        .output()
        .unwrap()
}

/// Node ids from the first prompt token to `end`, from the JSON.
fn json_path(j: &Value, end: usize) -> Vec<usize> {
    let mut out = vec![];
    let mut at = Some(end);
    while let Some(n) = at {
        out.push(n);
        at = j["nodes"][n]["parent"].as_u64().map(|p| p as usize);
    }
    out.reverse();
    out
}

/// The generated records of the current path, from the JSON.
fn json_steps(j: &Value) -> Vec<Value> {
    let prompt_len = j["prompt_len"].as_u64().unwrap() as usize;
    let path = json_path(j, j["current"].as_u64().unwrap() as usize);
    path[prompt_len..]
        .iter()
        .map(|&n| j["nodes"][n]["record"].clone())
        .collect()
}

/// Makes the fixture from the real model; run by hand (`tests/fixtures/README.md`).
#[test]
#[ignore = "writes tests/fixtures/handout-session.json; run by hand to remake it"]
fn make_fixture() {
    let settings = SamplerSettings {
        seed: 7,
        ..SamplerSettings::default()
    };
    let load = LoadOptions::default();
    let opts = SessionOptions::default();
    let (mut s, _) =
        load_session(&support::real_model(), &load, settings, opts, &mut |_| {}).unwrap();
    let prompt = "Once upon a time";
    s.prefill_text(prompt, false).unwrap();
    s.note_prompt(prompt, false);
    // Path 1: eight tokens, running free.
    for _ in 0..8 {
        s.step(Choice::Sample).unwrap();
    }
    // Path 3 (made second): from step 2, teacher-force text full of characters to escape, with the
    // KV cache off, then two free steps.
    s.rewind(6).unwrap();
    s.set_kv_cache(false).unwrap();
    s.force_text(" <b>&\"x\"", &mut |_, _, _| {}).unwrap();
    s.step(Choice::Sample).unwrap();
    s.step(Choice::Sample).unwrap();
    s.set_kv_cache(true).unwrap();
    // Path 2, the current one: back to step 6 of path 1, force " dragon", then three free steps.
    let first = s.branches().iter().map(|b| b.id).min().unwrap();
    s.switch_branch(first).unwrap();
    s.rewind(2).unwrap();
    let dragon = s.encode(" dragon").unwrap();
    assert_eq!(dragon.len(), 1, "{dragon:?}");
    let r = s.step(Choice::Force(dragon[0])).unwrap();
    assert_eq!(r.committed.source, Source::Forced);
    for _ in 0..3 {
        s.step(Choice::Sample).unwrap();
    }
    assert_eq!(s.branches().len(), 3);
    session_file::write(&fixture_path(), &s.to_saved().unwrap()).unwrap();
}

#[test]
fn the_fixture_has_forced_tokens_branches_and_both_cache_modes() {
    let saved = fixture();
    let h = Handout::new(&saved, FIXTURE);
    assert!(h.steps.iter().any(|n| n.record.source == Source::Forced));
    assert_eq!(h.branches.len(), 3);
    assert!(h.timings.cached.is_some() && h.timings.uncached.is_some());
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!("markdown", render(&fixture(), FIXTURE, Format::Md));
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!("html", render(&fixture(), FIXTURE, Format::Html));
}

#[test]
fn every_generated_token_appears_in_both_formats() {
    let saved = fixture();
    let html = render(&saved, FIXTURE, Format::Html);
    let md = render(&saved, FIXTURE, Format::Md);
    let steps = json_steps(&fixture_json());
    assert!(steps.len() >= 8);
    for r in &steps {
        let text = r["token"]["text"].as_str().unwrap();
        let quoted = format!("⟨{}⟩", text.replace(' ', "␣"));
        let html_q = nexttoken::export::html::escape(&quoted);
        assert!(html.contains(&html_q), "{html_q} not in the HTML");
        let md_q = nexttoken::export::markdown::escape(&quoted);
        assert!(md.contains(&md_q), "{md_q} not in the Markdown");
    }
}

/// Whether each generated token span of the HTML text carries the forced class, in order.
fn html_forced_marks(html: &str) -> Vec<bool> {
    let text = &html[html.find("<p class=\"text\">").unwrap()..];
    let text = &text[..text.find("</p>").unwrap()];
    text.split("<span class=\"tok gen ")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].split(' ').any(|c| c == "forced"))
        .collect()
}

#[test]
fn the_forced_mark_is_on_exactly_the_forced_tokens() {
    let saved = fixture();
    let forced: Vec<bool> = json_steps(&fixture_json())
        .iter()
        .map(|r| r["source"] == "forced")
        .collect();
    assert!(forced.iter().any(|&f| f) && forced.iter().any(|&f| !f));
    let html = render(&saved, FIXTURE, Format::Html);
    assert_eq!(html_forced_marks(&html), forced);
    // The step table: a forced row and the flag exactly where the token was forced.
    let rows: Vec<bool> = html
        .split("<tr")
        .filter(|r| r.contains("<td class=\"top\">"))
        .map(|r| r.starts_with(" class=\"forced-row\"") && r.contains("⚑</b> forced"))
        .collect();
    assert_eq!(rows, forced);
    let md = render(&saved, FIXTURE, Format::Md);
    let text = md.lines().find(|l| l.starts_with("> ")).unwrap();
    let n = forced.iter().filter(|&&f| f).count();
    assert_eq!(text.matches("**\\[⚑").count(), n, "{text}");
    let table: Vec<bool> = md
        .lines()
        .skip_while(|l| !l.starts_with("| step |"))
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| l.contains("| ⚑ forced |"))
        .collect();
    assert_eq!(table, forced);
}

#[test]
fn the_html_is_self_contained() {
    let html = render(&fixture(), FIXTURE, Format::Html);
    for bad in [
        "http://", "https://", "src=", "@import", "url(", "<link", "<script",
    ] {
        assert!(!html.contains(bad), "the page refers outside itself: {bad}");
    }
    assert!(html.contains("@media print"));
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn branch_totals_are_the_sums_of_the_records_logprobs() {
    let j = fixture_json();
    let nodes = j["nodes"].as_array().unwrap();
    let prompt_len = j["prompt_len"].as_u64().unwrap() as usize;
    let current = j["current"].as_u64().unwrap() as usize;
    let has_child = |id: usize| {
        nodes
            .iter()
            .any(|n| n["parent"].as_u64() == Some(id as u64))
    };
    let ends: Vec<usize> = (prompt_len..nodes.len())
        .filter(|&n| !has_child(n) || n == current)
        .collect();
    let saved = fixture();
    let h = Handout::new(&saved, FIXTURE);
    assert_eq!(h.branches.iter().map(|b| b.end).collect::<Vec<_>>(), ends);
    let md = render(&fixture(), FIXTURE, Format::Md);
    let html = render(&fixture(), FIXTURE, Format::Html);
    for (b, &end) in h.branches.iter().zip(&ends) {
        let path = json_path(&j, end);
        let gen = &path[prompt_len..];
        let lp = |n: usize| nodes[n]["record"]["logprob"].as_f64().unwrap();
        let total: f64 = gen.iter().map(|&n| lp(n)).sum();
        let forced = gen
            .iter()
            .filter(|&&n| nodes[n]["record"]["source"] == "forced")
            .count();
        assert!((b.total_logprob - total).abs() < 1e-5, "{b:?} vs {total}");
        assert_eq!(
            (b.len, b.forced, b.current),
            (gen.len(), forced, end == current)
        );
        assert!((b.mean_logprob.unwrap() - total / gen.len() as f64).abs() < 1e-5);
        // The handout counts steps from 1: the fork's step is the first token of the path's own.
        let row = format!(
            " | {} | {} | {} | {total:.3} | ",
            b.fork_step + 1,
            gen.len(),
            forced
        );
        assert!(md.contains(&row), "{row} not in the Markdown");
        let cell = format!("<td class=\"num\">{total:.3}</td>");
        assert!(html.contains(&cell), "{cell} not in the HTML");
    }
    // The forced token drags its path down: the tokens the model chose itself score better on average.
    let dragon = h.branches.iter().find(|b| b.current).unwrap();
    assert!(dragon.forced > 0);
    assert!(dragon.mean_unforced_logprob.unwrap() > dragon.mean_logprob.unwrap());
}

#[test]
fn timings_are_recomputed_from_the_passes() {
    let j = fixture_json();
    let prompt_len = j["prompt_len"].as_u64().unwrap() as usize;
    let mut on = vec![];
    let mut off = vec![];
    for n in &j["nodes"].as_array().unwrap()[prompt_len..] {
        if n["pass"].is_null() {
            continue;
        }
        let ms = n["pass"]["ms"].as_f64().unwrap();
        if n["pass"]["kv_cache"].as_bool().unwrap() {
            on.push(ms);
        } else {
            off.push(ms);
        }
    }
    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        let n = xs.len();
        (xs[(n - 1) / 2] + xs[n / 2]) / 2.0
    };
    let t = Handout::new(&fixture(), FIXTURE).timings;
    let per_token = j["prefill"]["ms"].as_f64().unwrap() / j["prefill"]["tokens"].as_f64().unwrap();
    assert!((t.prefill_ms_per_token - per_token).abs() < 1e-12);
    let cached = t.cached.clone().unwrap();
    assert_eq!(cached.passes, on.len());
    assert!((cached.median_ms - median(&mut on)).abs() < 1e-12);
    assert!((t.uncached.clone().unwrap().median_ms - median(&mut off)).abs() < 1e-12);
    let ratio = median(&mut on) / per_token;
    assert!((t.decode_over_prefill().unwrap() - ratio).abs() < 1e-9);
    let md = render(&fixture(), FIXTURE, Format::Md);
    assert!(
        md.contains(&format!("**{ratio:.1}×** a prompt token")),
        "{md}"
    );
}

#[test]
fn token_text_is_escaped_in_both_formats() {
    let mut saved = fixture();
    let prompt_len = saved.prompt_len;
    let last = saved.current;
    assert!(last >= prompt_len);
    let nasty = "<i>&\"x'\n|`";
    saved.nodes[last].record.token.text = nasty.into();
    let html = render(&saved, FIXTURE, Format::Html);
    assert!(
        html.contains("&lt;i&gt;&amp;&quot;x&#39;↵<br>|`"),
        "HTML text"
    );
    assert!(!html.contains("<i>&\""));
    let md = render(&saved, FIXTURE, Format::Md);
    assert!(md.contains("⟨\\<i\\>\\&\"x'↵\\|\\`⟩"), "Markdown cell");
    // Every table row still has its columns: no cell broke out.
    let cols = |l: &str| l.replace("\\|", "").matches('|').count();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| step |")).collect();
    let want = cols(rows[0]);
    for l in md
        .lines()
        .skip_while(|l| !l.starts_with("| step |"))
        .take_while(|l| l.starts_with('|'))
    {
        assert_eq!(cols(l), want, "{l}");
    }
}

#[test]
fn split_utf8_bytes_are_joined_back_in_the_branch_text() {
    let mut saved = fixture();
    let path = facts::path_to(&saved, saved.current);
    let (a, b) = (path[path.len() - 2], path[path.len() - 1]);
    for (n, text) in [(a, "<E6 97>"), (b, "<A5>!")] {
        saved.nodes[n].record.token.text = text.into();
        saved.nodes[n].record.token.kind = nexttoken::protocol::TokenKind::Bytes;
    }
    assert_eq!(facts::decode(&saved, &[a, b]), "日!");
}

#[test]
fn the_format_follows_the_flag_then_the_extension_then_html() {
    let p = |s: &str| Some(PathBuf::from(s));
    assert_eq!(
        Format::resolve(None, p("a/notes.md").as_deref()),
        Format::Md
    );
    assert_eq!(
        Format::resolve(None, p("a/NOTES.Markdown").as_deref()),
        Format::Md
    );
    assert_eq!(Format::resolve(None, p("a.HTML").as_deref()), Format::Html);
    assert_eq!(Format::resolve(None, p("a.txt").as_deref()), Format::Html);
    assert_eq!(Format::resolve(None, None), Format::Html);
    assert_eq!(
        Format::resolve(Some(Format::Html), p("a.md").as_deref()),
        Format::Html
    );
}

#[test]
fn the_command_writes_the_file_atomically_in_the_asked_format() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_path();
    let out = dir.path().join("notes.md");
    let o = export(&[fixture.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    let saved = session_file::read(&fixture).unwrap();
    let model = nexttoken::engine::fetch::models_dir().join(&saved.model.file);
    assert_eq!(
        md,
        render_with_model(&saved, FIXTURE, Format::Md, Some(&model))
    );
    let html_out = dir.path().join("page.txt");
    let o = export(&[
        fixture.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        html_out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&html_out)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    // No temporary file is left beside them.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// A failed export: non-zero, one line on stderr that says `says`, no panic or backtrace.
fn refused(args: &[&str], says: &[&str]) {
    let o = export(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded");
    for s in says {
        assert!(err.contains(s), "{args:?}: {err:?} does not say {s:?}");
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn bad_input_gives_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let out = d("out.html");
    refused(
        &[&d("missing.json"), "-o", &out],
        &["no session file at", "missing.json", "trace --save"],
    );
    std::fs::write(d("junk.json"), "this is not json").unwrap();
    refused(
        &[&d("junk.json"), "-o", &out],
        &["not a valid nexttoken session", "not JSON"],
    );
    let whole = std::fs::read_to_string(fixture_path()).unwrap();
    std::fs::write(d("cut.json"), &whole[..whole.len() / 2]).unwrap();
    refused(
        &[&d("cut.json"), "-o", &out],
        &["truncated", "save the session again"],
    );
    let fixture = fixture_path();
    let f = fixture.to_str().unwrap();
    refused(
        &[f, "--format", "pdf", "-o", &out],
        &["invalid value 'pdf'", "html", "md"],
    );
    let nowhere = d("no/such/folder/out.html");
    refused(
        &[f, "-o", &nowhere],
        &["cannot save to", "folder exists", "-o"],
    );
    std::fs::copy(&fixture, d("s.json")).unwrap();
    refused(
        &[&d("s.json"), "-o", &d("s.json")],
        &["is the session file itself", "-o"],
    );
    assert_eq!(std::fs::read_to_string(d("s.json")).unwrap(), whole);
    assert!(!Path::new(&out).exists());
}

/// Runs a handout's command line as pasted into a shell in a fresh empty folder, far from the model's
/// (its `nexttoken` is this build; the models directory is the real model's, as on a machine where
/// `nexttoken fetch` put it there) and returns the token ids of its steps.
fn run_command(cmd: &str) -> Vec<u64> {
    let model = support::real_model();
    let bin = Path::new(env!("CARGO_BIN_EXE_nexttoken")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(elsewhere.path())
        .env("PATH", path)
        .env("NEXTTOKEN_MODELS_DIR", model.parent().unwrap())
        .env_remove("NEXTTOKEN_MODEL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "step")
        .map(|l| l["token"]["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn each_paths_command_repeats_it_on_the_real_model() {
    let saved = fixture();
    let model = support::real_model();
    assert_eq!(
        model.file_name().unwrap().to_string_lossy(),
        saved.model.file
    );
    let h = Handout::new(&saved, FIXTURE);
    for b in &h.branches {
        let cmd = b.command.as_ref().unwrap();
        let want: Vec<u64> = facts::path_to(&saved, b.end)[saved.prompt_len..]
            .iter()
            .map(|&n| saved.nodes[n].token as u64)
            .collect();
        assert_eq!(run_command(cmd), want, "{cmd}");
    }
    // As `nexttoken export` writes them here, with the model at hand: forced tokens as text where it
    // reads back (" dragon", " <", "&", ...), the same tokens.
    let md = render_with_model(&saved, FIXTURE, Format::Md, Some(&model));
    let cmds: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("nexttoken trace"))
        .collect();
    assert_eq!(
        cmds.len(),
        h.branches.len() + 1,
        "the run's, then each path's"
    );
    assert!(cmds[0].contains("--force '6: dragon'"), "{}", cmds[0]);
    for (cmd, b) in cmds[1..].iter().zip(&h.branches) {
        let want: Vec<u64> = facts::path_to(&saved, b.end)[saved.prompt_len..]
            .iter()
            .map(|&n| saved.nodes[n].token as u64)
            .collect();
        assert_eq!(run_command(cmd), want, "{cmd}");
    }
    assert_eq!(
        h.command.as_ref().unwrap(),
        h.branches
            .iter()
            .find(|b| b.current)
            .unwrap()
            .command
            .as_ref()
            .unwrap()
    );
}

#[test]
fn a_fresh_session_from_the_real_model_exports() {
    let model = support::real_model();
    let opts = SessionOptions::default();
    let (mut s, _) = load_session(
        &model,
        &LoadOptions::default(),
        SamplerSettings::default(),
        opts,
        &mut |_| {},
    )
    .unwrap();
    s.prefill_text("The capital of France is", false).unwrap();
    let mut ids = vec![];
    for _ in 0..3 {
        ids.push(s.step(Choice::Sample).unwrap().committed.token);
    }
    let pick = s.view().unwrap().next.candidates[4].token.clone();
    let forced = s.step(Choice::Force(pick.id)).unwrap().committed;
    assert_eq!(forced.source, Source::Forced);
    ids.push(forced.token);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fresh.json");
    session_file::write(&file, &s.to_saved().unwrap()).unwrap();
    let out = dir.path().join("fresh.html");
    let o = export(&[file.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    for t in &ids {
        let q = nexttoken::export::html::escape(&nexttoken::fmt::quoted_token(t));
        assert!(html.contains(&q), "{q}");
    }
    assert_eq!(html_forced_marks(&html), vec![false, false, false, true]);
    let md = render(&s.to_saved().unwrap(), "fresh.json", Format::Md);
    assert!(md.contains("# nexttoken handout") && md.contains("**\\[⚑"));
}

#[test]
fn the_exported_command_names_the_model_and_forced_text_and_repeats_the_path_from_anywhere() {
    let model = support::real_model();
    let (mut s, _) = load_session(
        &model,
        &LoadOptions::default(),
        SamplerSettings::default(),
        SessionOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    s.prefill_text("The capital of France is", false).unwrap();
    s.note_prompt("The capital of France is", false);
    // " Berlin" forced in place of the model's choice, then free running.
    let berlin = s.encode(" Berlin").unwrap();
    assert_eq!(berlin.len(), 1);
    assert_eq!(
        s.step(Choice::Force(berlin[0])).unwrap().committed.source,
        Source::Forced
    );
    for _ in 0..4 {
        s.step(Choice::Sample).unwrap();
    }
    let want: Vec<u64> = s.tokens()[s.prompt_len()..]
        .iter()
        .map(|&t| t as u64)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("berlin.json");
    session_file::write(&file, &s.to_saved().unwrap()).unwrap();
    let md = dir.path().join("berlin.md");
    let o = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(["export", file.to_str().unwrap(), "-o", md.to_str().unwrap()])
        .env("NEXTTOKEN_MODELS_DIR", model.parent().unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(&md).unwrap();
    let cmd = md
        .lines()
        .find(|l| l.starts_with("nexttoken trace"))
        .expect("a command line");
    assert!(cmd.contains("--model smollm2-135m "), "{cmd}");
    assert!(
        cmd.contains("--force '0: Berlin'"),
        "forced by its text: {cmd}"
    );
    assert_eq!(run_command(cmd), want, "{cmd}");
}

/// Each token the sampler chose keeps the settings it was chosen under. Steps at temperature 0.8, then
/// 0.3 set after the last of them: the handout's command is the path's own 0.8, and repeats it. Two
/// more steps at 0.3: no command line repeats the path, the handout says which setting changed where,
/// and its sampler row gives each run of steps its own settings. A saved and reloaded session keeps them.
#[test]
fn a_setting_changed_mid_session_is_in_the_handout_and_no_command_claims_to_repeat_it() {
    let model = support::real_model();
    let (mut s, _) = load_session(
        &model,
        &LoadOptions::default(),
        SamplerSettings {
            seed: 7,
            ..SamplerSettings::default()
        },
        SessionOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    s.prefill_text("The capital of France is", false).unwrap();
    s.note_prompt("The capital of France is", false);
    for _ in 0..3 {
        s.step(Choice::Sample).unwrap();
    }
    let cold = SamplerSettings {
        temperature: 0.3,
        ..s.settings().clone()
    };
    s.set_settings(cold);
    let saved = s.to_saved().unwrap();
    let h = Handout::new(&saved, "t.json");
    let cmd = h.command.as_ref().unwrap();
    assert!(
        cmd.contains("--temperature 0.8") || !cmd.contains("--temperature"),
        "{cmd}"
    );
    let want: Vec<u64> = s.tokens()[s.prompt_len()..]
        .iter()
        .map(|&t| t as u64)
        .collect();
    assert_eq!(run_command(cmd), want, "{cmd}");
    assert!(h.sampler.contains("temperature 0.80"), "{}", h.sampler);

    for _ in 0..2 {
        s.step(Choice::Sample).unwrap();
    }
    let check = |saved: &SavedSession| {
        let h = Handout::new(saved, "t.json");
        let why = h.command.unwrap_err();
        assert!(
            why.contains("temperature 0.80 → 0.30 from step 4 on"),
            "{why}"
        );
        assert!(
            h.sampler.starts_with("steps 1-3: temperature 0.80")
                && h.sampler.contains("; from step 4: temperature 0.30"),
            "{}",
            h.sampler
        );
        assert!(render(saved, "t.json", Format::Md).contains("No command line repeats it"));
    };
    let saved = s.to_saved().unwrap();
    check(&saved);
    // The file holds the older settings on the nodes that differ from its own; reloaded and saved
    // again, it says the same.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.json");
    session_file::write(&file, &saved).unwrap();
    let back = session_file::read(&file).unwrap();
    assert_eq!(
        back.nodes.iter().filter(|n| n.settings.is_some()).count(),
        3
    );
    s.restore_saved(&back, false).unwrap();
    check(&s.to_saved().unwrap());
}

#[test]
fn the_handout_says_why_when_no_command_line_repeats_the_path() {
    let why = |edit: &dyn Fn(&mut SavedSession)| {
        let mut saved = fixture();
        edit(&mut saved);
        let h = Handout::new(&saved, FIXTURE);
        let md = render(&saved, FIXTURE, Format::Md);
        assert!(md.contains("No command line repeats it"));
        h.command.unwrap_err()
    };
    let e = why(&|s| s.settings.greedy = true);
    assert!(e.contains("settings changed during the session"), "{e}");
    let e = why(&|s| {
        let at = facts::path_to(s, s.current)[s.prompt_len + 1];
        s.nodes[at].record.token.kind = nexttoken::protocol::TokenKind::Special;
    });
    assert!(e.contains("special token"), "{e}");
    let e = why(&|s| {
        let path = facts::path_to(s, s.current);
        let sampled = path[s.prompt_len..]
            .iter()
            .copied()
            .find(|&n| s.nodes[n].record.source == Source::Sampled)
            .expect("a sampled token");
        s.nodes[sampled].pass.as_mut().expect("its pass").round = true;
    });
    assert!(e.contains("speculative rounds drew"), "{e}");
    // A special token the path ends on is fine: trace stops there too.
    let mut saved = fixture();
    let tip = saved.current;
    saved.nodes[tip].record.token.kind = nexttoken::protocol::TokenKind::Special;
    assert!(Handout::new(&saved, FIXTURE).command.is_ok());
}

/// The class's answers, when the session kept any, get a short section in both formats: each answer's
/// step counted from 1 (as the status bar counts), the question, both answers, right or not, the detail;
/// the fixture, which has none, has no such section.
#[test]
fn the_class_answers_are_in_both_formats_when_there_are_any() {
    let mut saved = fixture();
    for f in [Format::Md, Format::Html] {
        assert!(!render(&saved, FIXTURE, f).contains("The class's answers"));
    }
    let answer = |position, class: &str, correct| nexttoken::protocol::ClassAnswer {
        position,
        question: "What comes next?".into(),
        kind: "token".into(),
        class: class.into(),
        model: "' there'".into(),
        correct,
        detail: "rank 1, 40.2%".into(),
    };
    saved.answers = vec![
        answer(saved.prompt_len, "' there'", true),
        answer(saved.prompt_len + 2, "'<dog>'", false),
    ];
    let md = render(&saved, FIXTURE, Format::Md);
    assert!(
        md.contains("## The class's answers\n\n1 of 2 right."),
        "{md}"
    );
    assert!(
        md.contains("| step 1 | What comes next? | ' there' | ' there' | ✓ yes | rank 1, 40.2% |")
    );
    assert!(md.contains("| step 3 | What comes next? | '\\<dog\\>' | ' there' | ✗ no |"));
    let html = render(&saved, FIXTURE, Format::Html);
    assert!(html.contains("<h2>The class's answers</h2>"));
    assert!(html.contains("<td class=\"num\">step 3</td><td>What comes next?</td><td><code>&#39;&lt;dog&gt;&#39;</code></td>"));
}

/// A session that ran speculative rounds on a measured machine: the saved file keeps the rounds and
/// the machine, and the handout shows both, in HTML and in Markdown.
#[test]
fn the_handout_shows_the_rounds_and_the_speed_of_light() {
    use nexttoken::engine::draft::DraftSpec;
    let mut s = support::real_session();
    let machine = s.measure_machine().unwrap().unwrap();
    s.set_settings(nexttoken::protocol::SamplerSettings {
        greedy: true,
        ..Default::default()
    });
    s.prefill_text("1, 2, 3, 4, 5, 6,", false).unwrap();
    s.load_draft(&DraftSpec::Layers(26), 4).unwrap();
    let rounds: Vec<_> = (0..2).map(|_| s.speculate(4).unwrap().report).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    nexttoken::engine::session_file::write(&path, &s.to_saved().unwrap()).unwrap();
    let saved = nexttoken::engine::session_file::read(&path).unwrap();
    assert_eq!(saved.rounds, rounds);
    assert_eq!(saved.machine.as_ref(), Some(&machine));
    for format in [Format::Md, Format::Html] {
        let page = render(&saved, "s.json", format);
        let bandwidth = format!("{:.1} GB/s", machine.bandwidth_gb_s);
        for want in [
            "Speculative decoding",
            "2 rounds with the draft layers:26",
            "✓ ",
            // Greedy rounds draw nothing: the bonus is the model's top token.
            "bonus: the model",
            &bandwidth,
            "GFLOP/s",
        ] {
            assert!(page.contains(want), "{format:?}: {want} missing\n{page}");
        }
        assert!(
            !page.contains("from p"),
            "{format:?}: a greedy round drew\n{page}"
        );
    }
}

/// The timing sentences say what their figures are made of, and do not teach what the figures cannot
/// show: steps slower than the whole prompt's pass are called slowed, a cache that gained nothing is
/// explained, the speed of light is an estimate that the steps may beat, and the prefill's bound is
/// the larger of its two floors at this prompt's length.
#[test]
fn the_timing_sentences_do_not_teach_what_the_figures_cannot_show() {
    use nexttoken::export::facts::{Decode, Timings};
    use nexttoken::export::timing_text::sentences;
    let decode = |passes, median_ms| Decode {
        passes,
        mean_ms: median_ms,
        median_ms,
    };
    // The walk's session: a 5-token prompt in 12.9 ms, steps of 303 ms with the cache, one of 240
    // without.
    let busy = Timings {
        prefill_tokens: 5,
        prefill_ms: 12.88,
        prefill_ms_per_token: 12.88 / 5.0,
        ttft_ms: 13.08,
        cached: Some(decode(9, 303.0)),
        uncached: Some(decode(1, 240.0)),
    };
    let text = sentences(&busy, |s| s.to_string()).join(" ");
    for want in [
        "the median of 9 decode passes",
        "took longer than the whole prompt's pass (12.88 ms for 5 tokens at once)",
        "medians of 1 passes without and 9 with",
        "At these lengths re-reading the whole text costs about as much",
        "on every branch",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let quiet = Timings {
        cached: Some(decode(9, 6.5)),
        uncached: Some(decode(3, 19.0)),
        ..busy.clone()
    };
    let text = sentences(&quiet, |s| s.to_string()).join(" ");
    assert!(
        !text.contains("took longer") && !text.contains("At these lengths"),
        "{text}"
    );

    let mut saved = fixture();
    let m = nexttoken::protocol::MachineSpeed {
        bandwidth_gb_s: 13.5,
        from_cache: false,
        weight_bytes: 97_000_000,
        kv_bytes_per_position: 46_080,
        matmul_flop_per_token: 2.7e8,
        attention_flop_per_key: 1.1e5,
        peak_gflops: 218.0,
    };
    saved.machine = Some(m.clone());
    let light = |t: &Timings, prefill_tokens| {
        let t = Timings {
            prefill_tokens,
            ..t.clone()
        };
        nexttoken::export::rounds_text::light_sentences(&saved, &t, 12).join(" ")
    };
    // 5 tokens: 1.35 GFLOP at 218 GFLOP/s is 6.2 ms, the weights' read 7.2 ms: memory.
    let text = light(&quiet, 5);
    assert!(
        text.contains("an estimate") && text.contains("bound by memory"),
        "{text}"
    );
    assert!(
        text.contains("The steps beat the estimate"),
        "6.5 ms under a 7.2 ms floor: {text}"
    );
    let text = light(&busy, 512);
    assert!(text.contains("bound by arithmetic"), "{text}");
    assert!(!text.contains("beat the estimate"), "{text}");
}
