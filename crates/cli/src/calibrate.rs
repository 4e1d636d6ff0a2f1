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
        "{:<62} {:>12} {:>12} {:>7}  {:<10} {:<11} source",
        "check",
        "published",
        "simulated",
        "ratio",
        "role",
        "tested"
    );
    for c in &checks {
        // The tests' bound on a row, and whether this run keeps it.
        let tested = match c.tolerance {
            Some(t) if (c.ratio - 1.0).abs() <= t => format!("ok ±{:.0}%", t * 100.0),
            Some(t) => format!("OUT ±{:.0}%", t * 100.0),
            None => "-".to_string(),
        };
        outln!(
            "{:<62} {:>12.1} {:>12.1} {:>7.3}  {:<10} {:<11} {}",
            format!("{} ({})", c.name, c.unit),
            c.published,
            c.simulated,
            c.ratio,
            c.role,
            tested,
            c.source
        );
    }
    outln!(
        "\nratio = simulated / published. role: input = the figure went into the machine file, so the row checks that the mechanism gives it back; prediction = a measurement the model was not built from, so the ratio is the model's error; estimate = no measurement exists and \"published\" is the machine file's own ESTIMATE (an imported host has only these), so the row checks the mechanism, not the machine. tested: the bound the project's tests hold the row to (- = shown only)."
    );
    Ok(())
}
