//! The reward-per-version chart: an inline SVG bar chart drawn on the server (no
//! script, no chart library), one bar per version in push order, its height the mean
//! of the version's non-null rewards. Labels go through the template, so they are
//! escaped like any other text. Not a general plotting module.

use super::page::number;
use maud::{html, Markup};

/// One version's bar.
pub(super) struct Bar {
    /// The version's label (semver or short hash).
    pub label: String,
    /// Mean of its non-null rewards (None: every reward was null).
    pub mean: Option<f64>,
    /// Samples in all.
    pub samples: i64,
    /// Samples whose reward was null.
    pub nulls: i64,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 58.0;

/// The chart of `bars` (oldest first). The scale runs from min(0, lowest mean) to
/// max(1, highest mean), so rewards in [0, 1] keep one fixed scale.
pub(super) fn reward_chart(bars: &[Bar]) -> Markup {
    let means = bars.iter().filter_map(|b| b.mean).filter(|m| m.is_finite());
    let low = means.clone().fold(0.0_f64, f64::min);
    let high = means.fold(1.0_f64, f64::max);
    let span = if high > low { high - low } else { 1.0 };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let y = |v: f64| TOP + plot_h * (1.0 - (v - low) / span);
    let slot = plot_w / bars.len().max(1) as f64;
    let bar_w = (slot * 0.7).min(56.0);
    let ticks: Vec<f64> = (0..=4).map(|i| low + span * i as f64 / 4.0).collect();
    let zero = y(0.0_f64.clamp(low, high));
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(HEIGHT) viewBox={ "0 0 " (WIDTH) " " (HEIGHT) }
            role="img" aria-label="Mean reward per version" {
            title { "Mean reward per version" }
            @for tick in &ticks {
                line x1=(LEFT) x2=(WIDTH - RIGHT) y1=(fmt(y(*tick))) y2=(fmt(y(*tick))) stroke="#e3e7ed" {}
                text x=(LEFT - 6.0) y=(fmt(y(*tick) + 4.0)) text-anchor="end" font-size="11" fill="#5b6573" { (number(*tick)) }
            }
            line x1=(LEFT) x2=(WIDTH - RIGHT) y1=(fmt(zero)) y2=(fmt(zero)) stroke="#9aa4b1" {}
            @for (i, bar) in bars.iter().enumerate() {
                @let center = LEFT + slot * (i as f64 + 0.5);
                @let label = if bar.label.chars().count() > 14 { format!("{}…", bar.label.chars().take(13).collect::<String>()) } else { bar.label.clone() };
                g {
                    title {
                        (bar.label) ": "
                        @match bar.mean { Some(m) => { "mean reward " (number(m)) }, None => { "no non-null reward" } }
                        " over " (bar.samples) " samples (" (bar.nulls) " null)"
                    }
                    @if let Some(mean) = bar.mean.filter(|m| m.is_finite()) {
                        @let (top, bottom) = if y(mean) < zero { (y(mean), zero) } else { (zero, y(mean)) };
                        rect x=(fmt(center - bar_w / 2.0)) y=(fmt(top)) width=(fmt(bar_w)) height=(fmt((bottom - top).max(1.0)))
                            fill="#2457c5" rx="2" {}
                        text x=(fmt(center)) y=(fmt(top - 4.0)) text-anchor="middle" font-size="11" fill="#1d232b" { (number(mean)) }
                    } @else {
                        text x=(fmt(center)) y=(fmt(zero - 4.0)) text-anchor="middle" font-size="11" fill="#5b6573" { "null" }
                    }
                    text x=(fmt(center)) y=(fmt(HEIGHT - BOTTOM + 16.0)) text-anchor="middle" font-size="11" fill="#1d232b" { (label) }
                    text x=(fmt(center)) y=(fmt(HEIGHT - BOTTOM + 30.0)) text-anchor="middle" font-size="10" fill="#5b6573" { "n=" (bar.samples) }
                }
            }
        }
    }
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_and_escape() {
        let bars = vec![
            Bar { label: "0.1.0".into(), mean: Some(0.5), samples: 4, nulls: 1 },
            Bar { label: "<script>x</script>".into(), mean: Some(1.0), samples: 2, nulls: 0 },
            Bar { label: "0.3.0".into(), mean: None, samples: 3, nulls: 3 },
        ];
        let svg = reward_chart(&bars).into_string();
        assert_eq!(svg.matches("<rect").count(), 2, "a bar per version with a mean");
        assert!(!svg.contains("<script>") && svg.contains("&lt;script&gt;"));
        assert!(svg.contains(">null<") && svg.contains("n=3"));
        // Mean 1.0 reaches the top of the plot; 0.5 is half as tall.
        assert!(svg.contains(&format!("y=\"{:.1}\"", TOP)), "{svg}");
        let empty = reward_chart(&[]).into_string();
        assert!(empty.starts_with("<svg") && !empty.contains("<rect"));
    }
}
