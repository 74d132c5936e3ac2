//! HIB figures (PNG, plotters): embeddings as 3σ ellipses over class centroids (Figs 3–4, 7),
//! performance against uncertainty bins (Fig 5), and the D = 1 centroid ordering (Fig 10).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use hedge_embed::EmbeddedSet;
use plotters::prelude::*;
use tch::Kind;

/// Means `[N, C, D]` and variances (zeros for points) of a set, as nested vectors.
fn components(set: &EmbeddedSet) -> (usize, usize, Vec<f32>, Vec<f32>) {
    let size = set.embedding.mean.size();
    let (c, d) = (size[1] as usize, size[2] as usize);
    let flat = |t: &tch::Tensor| Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).expect("float tensor");
    let mean = flat(&set.embedding.mean);
    let var = set.embedding.variance.as_ref().map_or_else(|| vec![0.0; mean.len()], flat);
    (c, d, mean, var)
}

/// Class centroids of the mean embeddings (first two dimensions), by label.
pub fn centroids(set: &EmbeddedSet) -> BTreeMap<u32, (f64, f64)> {
    let (c, d, mean, _) = components(set);
    let mut acc: BTreeMap<u32, (f64, f64, usize)> = BTreeMap::new();
    for (i, &label) in set.labels.iter().enumerate() {
        let e = acc.entry(label).or_default();
        for k in 0..c {
            e.0 += f64::from(mean[(i * c + k) * d]) / c as f64;
            e.1 += if d > 1 { f64::from(mean[(i * c + k) * d + 1]) / c as f64 } else { 0.0 };
        }
        e.2 += 1;
    }
    acc.into_iter().map(|(l, (x, y, n))| (l, (x / n as f64, y / n as f64))).collect()
}

/// Renders to a temporary sibling and renames, so a failed plot never leaves half a PNG.
pub(crate) fn render(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<()>,
) -> Result<()> {
    let tmp = hedge_data::atomic::temp_sibling(path);
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
        draw(root.clone())?;
        root.present().map_err(|e| anyhow!("cannot write '{}': {e}", path.display()))?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Figures 3, 4 and 7: a sample of test images as 3σ ellipses (each mixture component its own
/// ellipse, components of one input joined by a line) over the clean class centroids, clean
/// and corrupt side by side. Uses the first two embedding dimensions.
pub fn embedding_ellipses(
    path: &Path,
    clean: &EmbeddedSet,
    corrupt: &EmbeddedSet,
    per_panel: usize,
    title: &str,
) -> Result<()> {
    let cents = centroids(clean);
    let (c, d, _, _) = components(clean);
    if d < 2 {
        return Err(anyhow!("ellipse plots need D >= 2 (this model has D = {d})"));
    }
    let panels = [("clean", clean), ("corrupt", corrupt)];
    // A common frame: the centroids and the middle 98 % of the clean means, plus a margin.
    let (_, _, clean_mean, _) = components(clean);
    let quantiles = |axis: usize| {
        let mut v: Vec<f64> = clean_mean.iter().skip(axis).step_by(d).map(|&m| f64::from(m)).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 100], v[v.len() - 1 - v.len() / 100])
    };
    let ((mut x0, mut x1), (mut y0, mut y1)) = (quantiles(0), quantiles(1));
    for &(x, y) in cents.values() {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    let pad = 0.15 * (x1 - x0).max(y1 - y0).max(1e-3);
    let (x0, x1, y0, y1) = (x0 - pad, x1 + pad, y0 - pad, y1 + pad);
    let classes: Vec<u32> = cents.keys().copied().collect();
    let colour = |label: u32| Palette99::pick(classes.iter().position(|&l| l == label).unwrap_or(0));
    render(path, (1400, 720), |root| {
        let root = root.titled(title, ("sans-serif", 24)).map_err(|e| anyhow!("{e}"))?;
        let areas = root.split_evenly((1, 2));
        for (area, (name, set)) in areas.iter().zip(panels) {
            let (_, _, mean, var) = components(set);
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{name} test images"), ("sans-serif", 20))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| anyhow!("{e}"))?;
            chart.configure_mesh().disable_mesh().draw().map_err(|e| anyhow!("{e}"))?;
            let step = (set.len() / per_panel.max(1)).max(1);
            for i in (0..set.len()).step_by(step) {
                let col = colour(set.labels[i]);
                let centre = |k: usize| (f64::from(mean[(i * c + k) * d]), f64::from(mean[(i * c + k) * d + 1]));
                for k in 0..c {
                    let (mx, my) = centre(k);
                    let (sx, sy) = (
                        3.0 * f64::from(var[(i * c + k) * d]).sqrt(),
                        3.0 * f64::from(var[(i * c + k) * d + 1]).sqrt(),
                    );
                    let outline: Vec<(f64, f64)> = (0..=48)
                        .map(|t| {
                            let a = t as f64 / 48.0 * std::f64::consts::TAU;
                            (mx + sx * a.cos(), my + sy * a.sin())
                        })
                        .collect();
                    chart
                        .draw_series(std::iter::once(PathElement::new(outline, col.mix(0.5))))
                        .map_err(|e| anyhow!("{e}"))?;
                    if k > 0 {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![centre(k - 1), centre(k)],
                                col.mix(0.6),
                            )))
                            .map_err(|e| anyhow!("{e}"))?;
                    }
                }
            }
            chart
                .draw_series(cents.iter().map(|(&l, &(x, y))| {
                    let r = 0.006 * (x1 - x0);
                    Rectangle::new([(x - r, y - r), (x + r, y + r)], colour(l).filled())
                }))
                .map_err(|e| anyhow!("{e}"))?;
            chart
                .draw_series(cents.iter().map(|(&l, &(x, y))| {
                    Text::new(format!("{l:0w$}", w = digits_of(&classes)), (x, y), ("sans-serif", 11).into_font())
                }))
                .map_err(|e| anyhow!("{e}"))?;
        }
        Ok(())
    })
}

fn digits_of(classes: &[u32]) -> usize {
    classes.iter().max().map_or(1, |&m| m.max(1).to_string().len()).max(2)
}

/// Figure 5: AP and KNN accuracy per η bin (bin 0 = most certain), clean and corrupt.
pub fn uncertainty_bins(path: &Path, series: &[(&str, &[f64])], title: &str) -> Result<()> {
    let points: Vec<(&str, Vec<(f64, f64)>)> =
        series.iter().map(|(name, v)| (*name, v.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect())).collect();
    line_chart(path, &points, "uncertainty bin (eta, low to high)", "performance", title)
}

/// Lines with markers on a [x-range] x [0, 1] frame, one per named series; NaNs are skipped.
pub fn line_chart(
    path: &Path,
    series: &[(&str, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    title: &str,
) -> Result<()> {
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.0, 1.0) };
    render(path, (900, 560), |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, 0f64..1.0)
            .map_err(|e| anyhow!("{e}"))?;
        chart.configure_mesh().x_desc(x_desc).y_desc(y_desc).draw().map_err(|e| anyhow!("{e}"))?;
        for (k, (name, values)) in series.iter().enumerate() {
            let points: Vec<(f64, f64)> = values.iter().copied().filter(|p| p.1.is_finite()).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), Palette99::pick(k).stroke_width(2)))
                .map_err(|e| anyhow!("{e}"))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], Palette99::pick(k).stroke_width(2)));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, Palette99::pick(k).filled())))
                .map_err(|e| anyhow!("{e}"))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        Ok(())
    })
}

/// Appendix D's score of a 1-D embedding: sort the class centroids along the line and count
/// adjacent pairs that share their tens or their ones digit (out of classes − 1), and the mean
/// length of runs of consecutive such pairs (in classes).
pub fn ordering_score(order: &[u32]) -> (usize, f64) {
    let shares = |a: u32, b: u32| a / 10 == b / 10 || a % 10 == b % 10;
    let links: Vec<bool> = order.windows(2).map(|w| shares(w[0], w[1])).collect();
    let score = links.iter().filter(|&&l| l).count();
    let mut runs = Vec::new();
    let mut current = 0usize;
    for &l in &links {
        if l {
            current += 1;
        } else if current > 0 {
            runs.push(current + 1);
            current = 0;
        }
    }
    if current > 0 {
        runs.push(current + 1);
    }
    let mean_run = if runs.is_empty() { 0.0 } else { runs.iter().sum::<usize>() as f64 / runs.len() as f64 };
    (score, mean_run)
}

/// Figure 10: class centroids of a D = 1 embedding on the number line, coloured by ones digit.
pub fn centroid_line(path: &Path, set: &EmbeddedSet, title: &str) -> Result<(Vec<u32>, usize, f64)> {
    let cents = centroids(set);
    let mut order: Vec<(u32, f64)> = cents.iter().map(|(&l, &(x, _))| (l, x)).collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1));
    let labels: Vec<u32> = order.iter().map(|o| o.0).collect();
    let (score, mean_run) = ordering_score(&labels);
    let (lo, hi) = (order.first().map_or(0.0, |o| o.1), order.last().map_or(1.0, |o| o.1));
    let pad = 0.05 * (hi - lo).max(1e-3);
    render(path, (1400, 300), |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{title}: adjacent pairs sharing a digit {score}/{}, mean run {mean_run:.1}",
                    labels.len().saturating_sub(1)
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(30)
            .build_cartesian_2d(lo - pad..hi + pad, -1f64..1.0)
            .map_err(|e| anyhow!("{e}"))?;
        chart.configure_mesh().disable_y_axis().disable_mesh().draw().map_err(|e| anyhow!("{e}"))?;
        for (k, &(l, x)) in order.iter().enumerate() {
            let y = if k % 2 == 0 { 0.3 } else { -0.3 };
            let col = Palette99::pick((l % 10) as usize);
            chart.draw_series(std::iter::once(Circle::new((x, 0.0), 4, col.filled()))).map_err(|e| anyhow!("{e}"))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{l:02}"),
                    (x, y),
                    ("sans-serif", 12).into_font().color(&col),
                )))
                .map_err(|e| anyhow!("{e}"))?;
        }
        Ok(())
    })?;
    Ok((labels, score, mean_run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_score_counts_shared_digits_and_runs() {
        // 12-17 share the tens, 17-27 the ones, 27-35 nothing, 35-45 the ones.
        let (score, mean_run) = ordering_score(&[12, 17, 27, 35, 45]);
        assert_eq!(score, 3);
        // Runs: 12-17-27 (3 classes) and 35-45 (2 classes).
        assert!((mean_run - 2.5).abs() < 1e-12);
        assert_eq!(ordering_score(&[11, 22, 33]), (0, 0.0));
    }
}
