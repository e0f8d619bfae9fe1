//! The results as a markdown table, a JSON file with every sample, and an SVG box
//! plot of the latency distribution per row (plotters' SVG backend: no font or system
//! library is needed to write it).

use super::stats::{median, ms, percentile};
use super::Row;
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;

/// Ratio of a row's median to the baseline's, the first row of its group.
fn ratio(r: &Row, base: &Row) -> f64 {
    median(&r.samples).as_secs_f64() / median(&base.samples).as_secs_f64().max(1e-9)
}

pub fn markdown(groups: &[(String, Vec<Row>)], failed: &[(String, String)]) -> String {
    let mut out = String::new();
    for (title, rows) in groups {
        let Some(base) = rows.first() else { continue };
        out.push_str(&format!("\n{title}\n\n| command | median ms | p90 ms | p99 ms | ratio to bare python |\n|---|---:|---:|---:|---:|\n"));
        for r in rows {
            out.push_str(&format!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.2}x |\n",
                r.name,
                ms(median(&r.samples)),
                ms(percentile(&r.samples, 0.9)),
                ms(percentile(&r.samples, 0.99)),
                ratio(r, base)
            ));
        }
    }
    if !failed.is_empty() {
        out.push_str("\nFailed (reported, never timed):\n\n");
        for (name, why) in failed {
            out.push_str(&format!("- {name}: {why}\n"));
        }
    }
    out
}

pub fn json(
    groups: &[(String, Vec<Row>)],
    failed: &[(String, String)],
    extra: serde_json::Value,
) -> serde_json::Value {
    let groups: Vec<serde_json::Value> = groups
        .iter()
        .map(|(title, rows)| {
            let base = rows.first();
            serde_json::json!({
                "title": title,
                "rows": rows.iter().map(|r| serde_json::json!({
                    "name": r.name,
                    "command": r.cmd,
                    "median_ms": ms(median(&r.samples)),
                    "p90_ms": ms(percentile(&r.samples, 0.9)),
                    "p99_ms": ms(percentile(&r.samples, 0.99)),
                    "ratio": base.map(|b| ratio(r, b)),
                    "samples_ms": r.samples.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "groups": groups,
        "failed": failed.iter().map(|(n, w)| serde_json::json!({"name": n, "error": w})).collect::<Vec<_>>(),
        "extra": extra,
    })
}

/// One horizontal box plot per row of the first group (the empty-script startup).
pub fn svg(path: &Path, title: &str, rows: &[Row]) -> Result<()> {
    let height = 80 + 40 * rows.len() as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).context("draw the plot")?;
    let top = rows
        .iter()
        .map(|r| ms(percentile(&r.samples, 0.99)) as f32)
        .fold(1.0f32, f32::max)
        * 1.1;
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(330)
        .build_cartesian_2d(0f32..top, names[..].into_segmented())
        .context("lay out the plot")?;
    chart
        .configure_mesh()
        .x_desc("milliseconds (box: quartiles, whiskers: min..max)")
        .disable_y_mesh()
        .draw()
        .context("draw the axes")?;
    chart
        .draw_series(rows.iter().zip(names.iter()).map(|(r, n)| {
            let v: Vec<f32> = r.samples.iter().map(|d| ms(*d) as f32).collect();
            Boxplot::new_horizontal(SegmentValue::CenterOf(n), &Quartiles::new(&v))
        }))
        .context("draw the boxes")?;
    root.present().context("write the SVG")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn row(name: &str, ms: &[u64]) -> Row {
        Row {
            name: name.into(),
            cmd: vec![name.into()],
            samples: ms.iter().map(|m| Duration::from_millis(*m)).collect(),
        }
    }

    #[test]
    fn table_json_and_plot_carry_every_row_and_failure() {
        let groups = vec![(
            "t".to_string(),
            vec![row("python", &[10, 10, 10]), row("maibox", &[20, 20, 20])],
        )];
        let failed = vec![("crun".to_string(), "exit 1".to_string())];
        let md = markdown(&groups, &failed);
        assert!(
            md.contains("| maibox | 20.00 | 20.00 | 20.00 | 2.00x |"),
            "{md}"
        );
        assert!(md.contains("- crun: exit 1"));
        let j = json(&groups, &failed, serde_json::json!({}));
        assert_eq!(
            j["groups"][0]["rows"][1]["samples_ms"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(j["failed"][0]["name"], "crun");
        let dir = std::env::temp_dir().join(format!("bench-svg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b.svg");
        svg(&p, "t", &groups[0].1).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("<svg") && text.contains("maibox"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
