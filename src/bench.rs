//! `nexttoken bench`: prefill and decode speed.
pub fn run(_model: &std::path::Path, _args: &crate::cli::BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("bench is not built yet")
}
