//! `schedlab calibrate`: prints the library's calibration checks.

use crate::{input, Failure};
use anyhow::Context;

pub(crate) fn run(machine: &str, json: bool) -> Result<(), Failure> {
    let checks = schedlab_exp::calibrate::checks(machine).map_err(input)?;
    if json {
        let v = serde_json::json!({"machine": machine, "checks": checks});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).context("serialising")?
        );
        return Ok(());
    }
    outln!(
        "{:<62} {:>12} {:>12} {:>7}  {:<10} source",
        "check",
        "published",
        "simulated",
        "ratio",
        "role"
    );
    for c in &checks {
        outln!(
            "{:<62} {:>12.1} {:>12.1} {:>7.3}  {:<10} {}",
            format!("{} ({})", c.name, c.unit),
            c.published,
            c.simulated,
            c.ratio,
            c.role,
            c.source
        );
    }
    Ok(())
}
