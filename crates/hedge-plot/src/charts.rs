//! Charts of the Bayesian and active-learning experiments: the GP lengthscale study grid,
//! MCMC trace plots and mean curves with standard-error bands.

use std::path::Path;

use plotters::prelude::*;

use crate::{draw_err, render, PlotError, Result};

/// One panel of the lengthscale study.
pub struct StudyPanel {
    pub lengthscale: f64,
    pub grid: Vec<f64>,
    pub truth: Vec<f64>,
    pub prior_samples: Vec<Vec<f64>>,
    pub posterior_mean: Vec<f64>,
    pub posterior_sd: Vec<f64>,
    pub train: Vec<(f64, f64)>,
}

/// Rows of (prior samples | posterior mean ± 2σ with the data and the true function).
pub fn lengthscale_grid(path: &Path, panels: &[StudyPanel]) -> Result<()> {
    let (w, h) = (1300u32, 300 * panels.len() as u32 + 60);
    render(path, (w, h), |root| {
        let root = root
            .titled("GP prior samples (left) and posterior mean ± 2σ (right) by lengthscale ℓ", ("sans-serif", 24))
            .map_err(draw_err)?;
        let cells = root.split_evenly((panels.len(), 2));
        for (row, panel) in panels.iter().enumerate() {
            let (x0, x1) = (panel.grid[0], *panel.grid.last().unwrap_or(&1.0));
            let left = &cells[2 * row];
            let mut chart = ChartBuilder::on(left)
                .caption(format!("prior, ℓ = {}", panel.lengthscale), ("sans-serif", 18))
                .margin(8)
                .x_label_area_size(25)
                .y_label_area_size(40)
                .build_cartesian_2d(x0..x1, -3.5f64..3.5)
                .map_err(draw_err)?;
            chart.configure_mesh().light_line_style(WHITE).draw().map_err(draw_err)?;
            for (k, s) in panel.prior_samples.iter().enumerate() {
                let pts: Vec<(f64, f64)> =
                    panel.grid.iter().copied().zip(s.iter().map(|v| v.clamp(-3.5, 3.5))).collect();
                chart.draw_series(LineSeries::new(pts, Palette99::pick(k).stroke_width(2))).map_err(draw_err)?;
            }
            let right = &cells[2 * row + 1];
            let mut chart = ChartBuilder::on(right)
                .caption(format!("posterior, ℓ = {}", panel.lengthscale), ("sans-serif", 18))
                .margin(8)
                .x_label_area_size(25)
                .y_label_area_size(40)
                .build_cartesian_2d(x0..x1, -3.5f64..3.5)
                .map_err(draw_err)?;
            chart.configure_mesh().light_line_style(WHITE).draw().map_err(draw_err)?;
            let clamp = |v: f64| v.clamp(-3.5, 3.5);
            let mut band: Vec<(f64, f64)> = panel
                .grid
                .iter()
                .zip(panel.posterior_mean.iter().zip(&panel.posterior_sd))
                .map(|(&x, (m, s))| (x, clamp(m + 2.0 * s)))
                .collect();
            band.extend(
                panel
                    .grid
                    .iter()
                    .zip(panel.posterior_mean.iter().zip(&panel.posterior_sd))
                    .rev()
                    .map(|(&x, (m, s))| (x, clamp(m - 2.0 * s))),
            );
            chart.draw_series(std::iter::once(Polygon::new(band, BLUE.mix(0.2).filled()))).map_err(draw_err)?;
            let truth: Vec<(f64, f64)> = panel.grid.iter().copied().zip(panel.truth.iter().copied()).collect();
            chart.draw_series(LineSeries::new(truth, BLACK.stroke_width(1))).map_err(draw_err)?;
            let mean: Vec<(f64, f64)> =
                panel.grid.iter().copied().zip(panel.posterior_mean.iter().map(|&v| clamp(v))).collect();
            chart.draw_series(LineSeries::new(mean, BLUE.stroke_width(2))).map_err(draw_err)?;
            chart.draw_series(panel.train.iter().map(|&p| Circle::new(p, 4, RED.filled()))).map_err(draw_err)?;
        }
        Ok(())
    })
}

/// Trace plots, one row per named quantity, one line per chain.
pub fn traces(path: &Path, quantities: &[(&str, &[Vec<f64>])]) -> Result<()> {
    render(path, (1100, 300 * quantities.len() as u32), |root| {
        let rows = root.split_evenly((quantities.len(), 1));
        for (area, (name, chains)) in rows.iter().zip(quantities) {
            let all = chains.iter().flatten();
            let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
            let pad = 0.05 * (hi - lo).max(1e-12);
            let n = chains.first().map_or(1, Vec::len);
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{name}: {} chains", chains.len()), ("sans-serif", 18))
                .margin(8)
                .x_label_area_size(25)
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..n as f64, (lo - pad)..(hi + pad))
                .map_err(draw_err)?;
            chart.configure_mesh().x_desc("kept draw").draw().map_err(draw_err)?;
            for (k, c) in chains.iter().enumerate() {
                let pts: Vec<(f64, f64)> = c.iter().enumerate().map(|(i, &v)| (i as f64, v)).collect();
                chart.draw_series(LineSeries::new(pts, Palette99::pick(k).mix(0.7))).map_err(draw_err)?;
            }
        }
        Ok(())
    })
}

/// A named curve of (x, mean, standard error) points.
pub type MeanCurve = (String, Vec<(f64, f64, f64)>);

/// Mean curves with ±1 standard-error bands, one per named series of (x, mean, se).
pub fn curves_with_error(path: &Path, series: &[MeanCurve], x_desc: &str, y_desc: &str, title: &str) -> Result<()> {
    let points = series.iter().flat_map(|(_, v)| v.iter());
    let (x0, x1, y0, y1) = points.fold((f64::MAX, f64::MIN, f64::MAX, f64::MIN), |(a, b, c, d), &(x, m, s)| {
        (a.min(x), b.max(x), c.min(m - s), d.max(m + s))
    });
    if x0 > x1 {
        return Err(PlotError::Input { field: "series", what: "no point to plot".into() });
    }
    let pad = 0.05 * (y1 - y0).max(1e-9);
    render(path, (900, 560), |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1.max(x0 + 1.0), (y0 - pad)..(y1 + pad))
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| crate::tick_label(*x))
            .y_label_formatter(&|y| crate::tick_label(*y))
            .draw()
            .map_err(draw_err)?;
        for (k, (name, v)) in series.iter().enumerate() {
            let colour = Palette99::pick(k);
            let mut band: Vec<(f64, f64)> = v.iter().map(|&(x, m, s)| (x, m + s)).collect();
            band.extend(v.iter().rev().map(|&(x, m, s)| (x, m - s)));
            chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.15).filled()))).map_err(draw_err)?;
            chart
                .draw_series(LineSeries::new(v.iter().map(|&(x, m, _)| (x, m)), colour.stroke_width(2)))
                .map_err(draw_err)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], Palette99::pick(k).stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        Ok(())
    })
}

const CELL: u32 = 84;
const LABEL_WIDTH: u32 = 90;

/// A dark-to-bright heat colour for v ∈ [0, 1] (black → red → yellow → white).
fn heat(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    let channel = |start: f64| ((v * 3.0 - start).clamp(0.0, 1.0) * 255.0) as u8;
    RGBColor(channel(0.0), channel(1.0), channel(2.0))
}

/// The activation-map grid of a concept-agnostic sweep (the paper's Fig. 4): `k` input images in
/// the top row, then one row per α with each image's map, scaled from its own minimum (black) to
/// maximum (white); `title` says which maps they are.
///
/// # Shapes
/// `pixels`: `k · 3 · 28 · 28` bytes (channels first); `values`: `alphas.len() · k · 28 · 28`.
pub fn activation_grid(
    path: &Path,
    title: &str,
    k: usize,
    pixels: &[u8],
    alphas: &[f64],
    values: &[f32],
) -> Result<()> {
    if pixels.len() != k * 3 * 784 || values.len() != alphas.len() * k * 784 {
        return Err(PlotError::Input {
            field: "activation maps",
            what: format!(
                "{} pixels and {} map values do not fit {k} images and {} rows",
                pixels.len(),
                values.len(),
                alphas.len()
            ),
        });
    }
    let size = (LABEL_WIDTH + CELL * k as u32, CELL * (1 + alphas.len() as u32) + 30);
    render(path, size, |root| {
        let err = |e: String| draw_err(format!("activation-map grid: {e}"));
        root.draw(&Text::new(
            format!("{title}; each map scaled from its minimum (black) to its maximum (white); top: inputs"),
            (5, 5),
            ("sans-serif", 16),
        ))
        .map_err(|e| err(e.to_string()))?;
        let top = 30;
        let scale = (CELL / 28) as i32;
        let cell = |row: u32, col: usize, colour: &dyn Fn(usize) -> RGBColor| -> Result<()> {
            let (x0, y0) = ((LABEL_WIDTH + CELL * col as u32) as i32, (top + CELL * row) as i32);
            for p in 0..784 {
                let (y, x) = ((p / 28) as i32, (p % 28) as i32);
                let c = colour(p);
                root.draw(&Rectangle::new(
                    [(x0 + x * scale, y0 + y * scale), (x0 + (x + 1) * scale, y0 + (y + 1) * scale)],
                    c.filled(),
                ))
                .map_err(|e| err(e.to_string()))?;
            }
            Ok(())
        };
        for i in 0..k {
            let image = &pixels[i * 3 * 784..(i + 1) * 3 * 784];
            cell(0, i, &|p| RGBColor(image[p], image[784 + p], image[2 * 784 + p]))?;
        }
        for (r, alpha) in alphas.iter().enumerate() {
            for i in 0..k {
                let map = &values[(r * k + i) * 784..(r * k + i + 1) * 784];
                let (lo, hi) = map.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                let range = (hi - lo).max(1e-12);
                cell(1 + r as u32, i, &|p| heat(f64::from((map[p] - lo) / range)))?;
            }
            let y = (top + CELL * (1 + r as u32) + CELL / 2) as i32;
            root.draw(&Text::new(format!("α = {alpha}"), (8, y), ("sans-serif", 16)))
                .map_err(|e| err(e.to_string()))?;
        }
        root.draw(&Text::new("input", (8, (top + CELL / 2) as i32), ("sans-serif", 16)))
            .map_err(|e| err(e.to_string()))?;
        Ok(())
    })
}
