//! The CI affordances every eval command shares (the original's `_ci_finish`): a
//! GitHub Actions step summary when `$GITHUB_STEP_SUMMARY` names a file, then the
//! reward gate — asking for a bar on a result with no aggregate reward fails, as a
//! miss does (a gate that cannot measure must not pass).
//!
//! It decides and writes the summary; printing the verdict and the exit code are
//! the caller's.

use crate::noise::Comparison;
use gateway_world::json::{python_str, Value};
use std::io::Write as _;

/// What the gate is asked.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The bar (None: no gate, the summary only).
    pub fail_under: Option<f64>,
    /// Where the bar came from (`--fail-under`, `world pass bar`, `default bar`).
    pub bar_source: String,
    /// The summary's heading.
    pub title: String,
    /// Extra rows of the summary.
    pub facts: Vec<(String, String)>,
    /// `--baseline`: the baseline evaluation's id and this run compared with it. The
    /// gate then fails on a significant regression (and on a bar only when one was
    /// given explicitly).
    pub baseline: Option<(String, Comparison)>,
}

/// The gate's answer: a line for stderr (when there is a bar) and whether it passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What to say on stderr.
    pub message: Option<String>,
    /// False: exit 1.
    pub pass: bool,
}

/// Python's `format(x, "g")`: six significant digits, trailing zeros dropped,
/// scientific below 1e-4 and from 1e6.
pub fn format_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x == 0.0 {
            "0".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let scientific = format!("{x:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exponent) {
        trim(&format!("{x:.*}", (5 - exponent).max(0) as usize))
    } else {
        format!("{}e{}{:02}", trim(mantissa), if exponent < 0 { '-' } else { '+' }, exponent.abs())
    }
}

/// The aggregate reward of a result: `metrics.avg_reward`, else a numeric `reward`.
pub fn aggregate(result: &Value) -> Option<f64> {
    let metrics = result.get("metrics").filter(|m| m.as_object().is_some());
    let numeric = |v: &Value| match v {
        Value::Int(_) | Value::Float(_) => v.as_f64(),
        _ => None,
    };
    metrics.and_then(|m| m.get("avg_reward")).and_then(numeric).or_else(|| result.get("reward").and_then(numeric))
}

/// The value when Python would find it true.
fn truthy(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| gateway_hub_client::client::truthy(v))
}

/// The step summary's markdown table.
pub fn summary(result: &Value, gate: &Gate) -> String {
    let avg = aggregate(result);
    let mut rows: Vec<(String, String)> = vec![("avg reward".into(), avg.map_or("n/a".into(), |a| format!("{a:.3}")))];
    let n = truthy(result.get("metrics").and_then(|m| m.get("n"))).or_else(|| result.get("samples")).filter(|v| !matches!(v, Value::Null));
    if let Some(n) = n {
        rows.push(("samples".into(), python_str(n)));
    }
    if let Some(id) = truthy(result.get("evaluationId")) {
        rows.push(("evaluation".into(), python_str(id)));
    }
    // Shown when every task had two rollouts or more (before that the interval says
    // little, and the table stays the original's).
    let intervals = result.get("passHatKInterval").filter(|i| i.get("2").is_some());
    if let Some(pair) = intervals.and_then(|i| i.get("1")).and_then(Value::as_array) {
        if let [Some(low), Some(high)] = [pair.first().and_then(Value::as_f64), pair.get(1).and_then(Value::as_f64)] {
            rows.push(("pass^1 interval".into(), format!("{low:.3}–{high:.3}")));
        }
    }
    rows.extend(gate.facts.iter().cloned());
    if let Some((id, comparison)) = &gate.baseline {
        let verdict = if comparison.paired == 0 {
            "FAIL — no task in common"
        } else if comparison.regressed() {
            "FAIL — significant regression"
        } else {
            "PASS — no significant regression"
        };
        rows.push(("baseline".into(), format!("{id}: {}", comparison_text(comparison))));
        rows.push(("gate".into(), verdict.into()));
    }
    if let Some(bar) = gate.fail_under {
        let verdict = if avg.is_some_and(|a| a >= bar) { "PASS" } else { "FAIL" };
        rows.push(("gate".into(), format!("{verdict} — bar {} ({})", format_g(bar), gate.bar_source)));
    }
    let mut lines = vec![format!("### {}", gate.title), String::new(), "| | |".into(), "|---|---|".into()];
    lines.extend(rows.iter().map(|(k, v)| format!("| {k} | {v} |")));
    lines.join("\n") + "\n\n"
}

/// Write the step summary (when `$GITHUB_STEP_SUMMARY` is set; a failure to write
/// is ignored: the gate is the contract), then judge the gate.
pub fn finish(result: &Value, gate: &Gate) -> Verdict {
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = file.write_all(summary(result, gate).as_bytes());
        }
    }
    let mut verdicts = Vec::new();
    if let Some((id, comparison)) = &gate.baseline {
        verdicts.push(baseline_verdict(id, comparison));
    }
    if let Some(bar) = gate.fail_under {
        verdicts.push(bar_verdict(result, bar, &gate.bar_source));
    }
    let pass = verdicts.iter().all(|v| v.pass);
    let lines: Vec<String> = verdicts.into_iter().filter_map(|v| v.message).collect();
    Verdict { message: (!lines.is_empty()).then(|| lines.join("\n")), pass }
}

/// `mean 0.500 vs 0.625 (Δ -0.125 over 5 tasks, p = 0.3100, α = 0.05)`.
fn comparison_text(comparison: &Comparison) -> String {
    format!(
        "mean reward {:.3} vs {:.3} (Δ {:+.3} over {} task(s), p = {:.4}, α = {})",
        comparison.current,
        comparison.baseline,
        comparison.delta,
        comparison.paired,
        comparison.p_value,
        format_g(comparison.alpha)
    )
}

fn baseline_verdict(id: &str, comparison: &Comparison) -> Verdict {
    if comparison.paired == 0 {
        return Verdict {
            message: Some(format!("gate: no task graded here was graded in baseline {id} — cannot compare, failing.")),
            pass: false,
        };
    }
    let text = comparison_text(comparison);
    if comparison.regressed() {
        Verdict { message: Some(format!("gate: a significant regression against baseline {id}: {text}.")), pass: false }
    } else {
        Verdict { message: Some(format!("gate: no significant regression against baseline {id}: {text}.")), pass: true }
    }
}

fn bar_verdict(result: &Value, bar: f64, source: &str) -> Verdict {
    let shown = format_g(bar);
    match aggregate(result) {
        None => Verdict {
            message: Some(format!("gate: the result carries no aggregate reward — cannot verify the {shown} bar ({source}), failing.")),
            pass: false,
        },
        Some(avg) if avg < bar => {
            Verdict { message: Some(format!("gate: avg reward {avg:.3} is below the {shown} bar ({source}).")), pass: false }
        }
        Some(avg) => Verdict { message: Some(format!("gate: avg reward {avg:.3} clears the {shown} bar ({source}).")), pass: true },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_is_pythons() {
        for (x, want) in [
            (0.7, "0.7"),
            (1.0, "1"),
            (0.75, "0.75"),
            (0.0, "0"),
            (0.123456789, "0.123457"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1234567.0, "1.23457e+06"),
        ] {
            assert_eq!(format_g(x), want, "{x}");
        }
    }

    #[test]
    fn the_summary_and_the_verdict() {
        let result =
            gateway_world::json::parse(r#"{"evaluationId": "ev1", "samples": 2, "metrics": {"n": 2, "avg_reward": 0.5}}"#).unwrap().value;
        let gate = Gate {
            fail_under: Some(0.7),
            bar_source: "default bar".into(),
            title: "World sim · w@b".into(),
            facts: vec![("model".into(), "m".into())],
            baseline: None,
        };
        assert_eq!(
            summary(&result, &gate),
            "### World sim · w@b\n\n| | |\n|---|---|\n| avg reward | 0.500 |\n| samples | 2 |\n| evaluation | ev1 |\n| model | m |\n| gate | FAIL — bar 0.7 (default bar) |\n\n"
        );
        let verdict = finish(&result, &gate);
        assert_eq!(verdict, Verdict { message: Some("gate: avg reward 0.500 is below the 0.7 bar (default bar).".into()), pass: false });
        let unscored = gateway_world::json::parse(r#"{"reward": null}"#).unwrap().value;
        assert!(!finish(&unscored, &gate).pass);
        assert!(finish(&unscored, &Gate { fail_under: None, ..gate }).pass);
    }
}
