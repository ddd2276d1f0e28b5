//! Gates that know noise: how sure a run's pass^k is, and whether a run is worse
//! than a baseline evaluation by more than chance.
//!
//! An agent's rollouts are noisy: the same agent on the same world passes a task
//! three times in four, then twice. A bar on the mean flaps with that noise, and a
//! drop from 0.62 to 0.50 may be nothing. Two statistics replace the guess:
//!
//! - **pass^k with an interval**: a two-stage (tasks, then each task's rollouts)
//!   percentile bootstrap of the unbiased pass^k estimate, so both the choice of
//!   tasks and each task's luck widen it. One task with one rollout has no noise to
//!   measure, and its interval is the point.
//! - **a paired regression test** against a baseline: the statistic is the mean over
//!   the tasks both runs graded of (this run's mean reward − the baseline's); its null
//!   distribution permutes the "this run"/"baseline" labels of each task's rewards
//!   within that task (a stratified permutation test: tasks differ in difficulty, so
//!   only rewards of one task are exchanged). The one-sided p-value is the share of
//!   permutations at least as far below zero; the gate fails when it is under α.
//!
//! Both draw from a PCG generator with a fixed seed, so the same rollouts always give
//! the same interval and verdict: a rerun of identical results cannot flap.

use gateway_world::json::{object, Map, Value};
use rand_pcg::rand_core::{Rng as _, SeedableRng as _};
use rand_pcg::Pcg64;
use std::collections::BTreeMap;

/// Bootstrap resamples behind an interval.
const RESAMPLES: usize = 2000;
/// Permutations behind a p-value.
const PERMUTATIONS: usize = 10_000;
/// The generator's seed: fixed, so that identical results give identical answers.
const SEED: u64 = 0x6761_7465_7761_7921;

/// The default significance level of the regression test (and 1 − the interval's confidence).
pub const DEFAULT_ALPHA: f64 = 0.05;

/// One graded rollout as the statistics see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The task (the pairing key).
    pub task: String,
    /// Its reward.
    pub reward: f64,
    /// Whether it reached its task's pass bar.
    pub passed: bool,
}

fn by_task(outcomes: &[Outcome]) -> BTreeMap<&str, Vec<&Outcome>> {
    let mut tasks: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for outcome in outcomes {
        tasks.entry(&outcome.task).or_default().push(outcome);
    }
    tasks
}

fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// A uniform index below `n` (n > 0); the modulo bias at these sizes is below 1e-15.
fn index(rng: &mut Pcg64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn rounded(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// `{k: [low, high]}` for every k up to the fewest graded rollouts of a task: the
/// `1 − alpha` percentile-bootstrap interval of pass^k (see the module docs).
pub fn pass_hat_k_intervals(outcomes: &[Outcome], alpha: f64) -> Value {
    let tasks: Vec<(usize, usize)> =
        by_task(outcomes).values().map(|rollouts| (rollouts.len(), rollouts.iter().filter(|r| r.passed).count())).collect();
    let most = tasks.iter().map(|(n, _)| *n).min().unwrap_or(0);
    let mut rng = Pcg64::seed_from_u64(SEED);
    let mut estimates: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); most];
    for _ in 0..RESAMPLES {
        let mut sums = vec![0.0; most];
        for _ in 0..tasks.len() {
            let (n, passes) = tasks[index(&mut rng, tasks.len())];
            // The task's rollouts resampled: each draw passes with its observed rate.
            let drawn = (0..n).filter(|_| index(&mut rng, n) < passes).count();
            for (k, sum) in sums.iter_mut().enumerate() {
                *sum += choose(drawn, k + 1) / choose(n, k + 1);
            }
        }
        for (k, sum) in sums.into_iter().enumerate() {
            estimates[k].push(sum / tasks.len() as f64);
        }
    }
    let mut out = Map::default();
    for (k, mut values) in estimates.into_iter().enumerate() {
        values.sort_by(f64::total_cmp);
        let (low, high) = (percentile(&values, alpha / 2.0), percentile(&values, 1.0 - alpha / 2.0));
        out.insert((k + 1).to_string(), Value::Array(vec![Value::Float(rounded(low)), Value::Float(rounded(high))]));
    }
    Value::Object(out)
}

/// This run against a baseline (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Tasks both graded.
    pub paired: usize,
    /// Tasks only one of the two graded (left out), by name.
    pub unpaired: Vec<String>,
    /// Mean over the paired tasks of this run's mean reward.
    pub current: f64,
    /// The same of the baseline.
    pub baseline: f64,
    /// `current − baseline`.
    pub delta: f64,
    /// The one-sided p-value of a drop this large by chance.
    pub p_value: f64,
    /// The significance level.
    pub alpha: f64,
}

impl Comparison {
    /// Whether this run is significantly worse than the baseline.
    pub fn regressed(&self) -> bool {
        self.paired > 0 && self.delta < 0.0 && self.p_value < self.alpha
    }

    /// As a result member: `{pairedTasks, unpairedTasks, meanReward, baselineMeanReward,
    /// delta, pValue, alpha, regressed}`.
    pub fn describe(&self) -> Value {
        object([
            ("pairedTasks", Value::Int(self.paired as i64)),
            ("unpairedTasks", Value::Array(self.unpaired.iter().map(Value::str).collect())),
            ("meanReward", Value::Float(rounded(self.current))),
            ("baselineMeanReward", Value::Float(rounded(self.baseline))),
            ("delta", Value::Float(rounded(self.delta))),
            ("pValue", Value::Float(rounded(self.p_value))),
            ("alpha", Value::Float(self.alpha)),
            ("regressed", Value::Bool(self.regressed())),
        ])
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Compare `current` with `baseline`, task by task, at level `alpha`.
pub fn compare(current: &[Outcome], baseline: &[Outcome], alpha: f64) -> Comparison {
    let (now, before) = (by_task(current), by_task(baseline));
    let mut unpaired: Vec<String> =
        now.keys().chain(before.keys()).filter(|t| !(now.contains_key(*t) && before.contains_key(*t))).map(|t| t.to_string()).collect();
    unpaired.sort();
    unpaired.dedup();
    // Per paired task: every reward of the two runs, this run's first.
    let pools: Vec<(Vec<f64>, usize)> = now
        .iter()
        .filter_map(|(task, mine)| {
            let theirs = before.get(task)?;
            let mut pool: Vec<f64> = mine.iter().map(|o| o.reward).collect();
            pool.extend(theirs.iter().map(|o| o.reward));
            Some((pool, mine.len()))
        })
        .collect();
    let statistic = |pools: &[(Vec<f64>, usize)]| -> (f64, f64) {
        let current = mean(&pools.iter().map(|(pool, n)| mean(&pool[..*n])).collect::<Vec<_>>());
        let baseline = mean(&pools.iter().map(|(pool, n)| mean(&pool[*n..])).collect::<Vec<_>>());
        (current, baseline)
    };
    if pools.is_empty() {
        return Comparison { paired: 0, unpaired, current: f64::NAN, baseline: f64::NAN, delta: f64::NAN, p_value: 1.0, alpha };
    }
    let (current, baseline) = statistic(&pools);
    let delta = current - baseline;
    let mut rng = Pcg64::seed_from_u64(SEED);
    let mut shuffled = pools.clone();
    let mut as_low = 0usize;
    for _ in 0..PERMUTATIONS {
        for (pool, _) in &mut shuffled {
            // Fisher–Yates: which rewards are "this run's" is drawn anew within the task.
            for i in (1..pool.len()).rev() {
                pool.swap(i, index(&mut rng, i + 1));
            }
        }
        let (a, b) = statistic(&shuffled);
        // A tolerance: equal means computed in another order must count as equal.
        if a - b <= delta + 1e-12 {
            as_low += 1;
        }
    }
    let p_value = (as_low + 1) as f64 / (PERMUTATIONS + 1) as f64;
    Comparison { paired: pools.len(), unpaired, current, baseline, delta, p_value, alpha }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(task: &str, rewards: &[f64]) -> Vec<Outcome> {
        rewards.iter().map(|r| Outcome { task: task.into(), reward: *r, passed: *r >= 0.7 }).collect()
    }

    #[test]
    fn intervals_hold_the_estimate_narrow_with_evidence_and_repeat_exactly() {
        let few: Vec<Outcome> = [outcomes("a", &[1.0, 0.0]), outcomes("b", &[1.0, 1.0])].concat();
        let many: Vec<Outcome> = (0..40).flat_map(|t| outcomes(&format!("t{t}"), &[1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0])).collect();
        let width = |v: &Value| {
            let pair = v.get("1").and_then(Value::as_array).unwrap();
            (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap())
        };
        let (low, high) = width(&pass_hat_k_intervals(&few, 0.05));
        assert!(low <= 0.75 && 0.75 <= high && high - low > 0.3, "{low} {high}");
        let (low, high) = width(&pass_hat_k_intervals(&many, 0.05));
        assert!(low <= 0.625 && 0.625 <= high && high - low < 0.2, "{low} {high}");
        assert!(gateway_world::json::json_equal(&pass_hat_k_intervals(&many, 0.05), &pass_hat_k_intervals(&many, 0.05)));
        assert_eq!(pass_hat_k_intervals(&many, 0.05).as_object().unwrap().len(), 8, "k up to the rollouts of a task");
        let single = pass_hat_k_intervals(&outcomes("a", &[1.0]), 0.05);
        assert_eq!(width(&single), (1.0, 1.0), "no noise to measure");
    }

    #[test]
    fn noise_is_not_a_regression_and_a_real_drop_is() {
        let baseline: Vec<Outcome> = (0..5).flat_map(|t| outcomes(&format!("t{t}"), &[1.0, 0.0, 1.0, 1.0])).collect();
        // One pass fewer on one task: within noise.
        let mut noisy = baseline.clone();
        noisy[0].reward = 0.0;
        let comparison = compare(&noisy, &baseline, DEFAULT_ALPHA);
        assert!(comparison.delta < 0.0 && !comparison.regressed(), "{comparison:?}");
        // Every task failed: a regression.
        let broken: Vec<Outcome> = (0..5).flat_map(|t| outcomes(&format!("t{t}"), &[0.0, 0.0, 0.0, 0.0])).collect();
        let comparison = compare(&broken, &baseline, DEFAULT_ALPHA);
        assert!(comparison.regressed() && comparison.p_value < 0.01, "{comparison:?}");
        // Identical results: no difference at all, and the same answer every time.
        let same = compare(&baseline, &baseline, DEFAULT_ALPHA);
        assert_eq!((same.delta, same.regressed()), (0.0, false));
        assert_eq!(compare(&broken, &baseline, DEFAULT_ALPHA), compare(&broken, &baseline, DEFAULT_ALPHA));
        // Better is never a regression.
        assert!(!compare(&baseline, &broken, DEFAULT_ALPHA).regressed());
    }

    #[test]
    fn only_tasks_both_graded_are_compared() {
        let baseline = [outcomes("a", &[1.0, 1.0]), outcomes("gone", &[1.0])].concat();
        let current = [outcomes("a", &[0.0, 0.0]), outcomes("new", &[0.0])].concat();
        let comparison = compare(&current, &baseline, DEFAULT_ALPHA);
        assert_eq!((comparison.paired, comparison.unpaired.clone()), (1, vec!["gone".to_string(), "new".to_string()]));
        // One task, two rollouts each: the smallest possible p is 1/6 — never significant.
        assert!(!comparison.regressed(), "{comparison:?}");
        let none = compare(&outcomes("x", &[1.0]), &outcomes("y", &[1.0]), DEFAULT_ALPHA);
        assert_eq!((none.paired, none.regressed()), (0, false));
    }
}
