//! `--force STEP:ID` and `--force STEP:text` (trace and compare): which token to force at which step.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

/// What to force at one step: a token id, or text tokenised and forced from that step on.
#[derive(Debug, Clone, PartialEq)]
pub enum ForceSpec {
    Id(u32),
    Text(String),
}

/// Parses `STEP:ID` or `STEP:text` specs into a step -> spec map.
pub fn parse_forces(specs: &[String]) -> Result<BTreeMap<usize, ForceSpec>> {
    let mut out = BTreeMap::new();
    for spec in specs {
        let (step, what) = spec.split_once(':').with_context(|| {
            format!("--force `{spec}`: expected STEP:ID or STEP:text, e.g. 2:7042 or 0:' Rome'")
        })?;
        let step: usize = step
            .trim()
            .parse()
            .with_context(|| format!("--force `{spec}`: `{step}` is not a step number"))?;
        let f = match what.parse::<u32>() {
            Ok(id) => ForceSpec::Id(id),
            Err(_) if what.is_empty() => {
                bail!("--force `{spec}`: nothing to force after the colon")
            }
            Err(_) => ForceSpec::Text(what.to_string()),
        };
        out.insert(step, f);
    }
    Ok(out)
}
