//! The figures of hedge's experiments as PNG files (plotters), drawn from plain numbers so that
//! every pillar can use them without this crate knowing its types: line charts, η-bin curves
//! (HIB Fig. 5), embeddings as 3σ ellipses over class centroids (Figs 3–4, 7) and the D = 1
//! centroid ordering (Fig. 10). Every file is rendered to a temporary sibling and renamed, so a
//! failed plot never leaves half a PNG.

pub mod charts;

pub use charts::{activation_grid, curves_with_error, lengthscale_grid, traces, MeanCurve, StudyPanel};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
pub use plotters::prelude::SeriesLabelPosition;
use plotters::prelude::*;

/// What can go wrong while drawing a figure.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot draw '{path}': {what}")]
    Draw { path: PathBuf, what: String },

    #[error("invalid figure input '{field}': {what}")]
    Input { field: &'static str, what: String },

    #[error(transparent)]
    Run(#[from] hedge_run::RunError),

    #[error("cannot write '{path}': {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Result alias of this crate.
pub type Result<T, E = PlotError> = std::result::Result<T, E>;

/// A drawing backend error as a [`PlotError`] (for `map_err` inside [`render`] closures).
pub fn draw_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw { path: PathBuf::new(), what: e.to_string() }
}

/// Renders `path` at `size` pixels on a white background through `draw`, to a temporary
/// sibling first and renamed when complete.
pub fn render<E: From<PlotError>>(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<BitMapBackend<'_>, Shift>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let tmp = hedge_run::atomic::temp_sibling(path);
    let failed = |e: &dyn std::fmt::Display| PlotError::Draw { path: path.to_path_buf(), what: e.to_string() };
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| failed(&e))?;
        draw(root.clone())?;
        root.present().map_err(|e| failed(&e))?;
    }
    std::fs::rename(&tmp, path).map_err(|source| PlotError::Io { path: path.to_path_buf(), source })?;
    Ok(())
}

/// Lines with markers on an [x-range] × [0, 1] frame, one per named series; non-finite values
/// are skipped. The legend goes to the corner its box covers the fewest points of the lines in
/// ([`emptiest_corner`]).
pub fn line_chart(
    path: &Path,
    series: &[(&str, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    title: &str,
) -> Result<()> {
    let legend = emptiest_corner(series, (0.0, 1.0));
    line_chart_in(path, series, x_desc, y_desc, title, (0.0, 1.0), legend)
}

/// Plot area of [`line_chart_in`]'s 900 x 560 frame, in pixels (less caption, label areas and
/// margins), and a legend entry's height and a label character's width there: what
/// [`emptiest_corner`] sizes the legend box with.
const PLOT_AREA_PX: (f64, f64) = (800.0, 440.0);
const LEGEND_ROW_PX: f64 = 20.0;
const LEGEND_CHAR_PX: f64 = 7.0;
/// How far a line must stay from the legend box, as a share of the plot area.
const LEGEND_CLEARANCE: f64 = 0.03;

/// The legend position, among the nine plotters offers, whose box (sized from the number of named
/// series and their longest name, and widened by a small clearance) covers the fewest points of
/// the lines on an x-range (the series' own) × `y_range` frame; the lines are sampled between
/// their points so that a line crossing a box counts there too. Ties go to the first of upper
/// right, lower right, upper left, lower left, middle right, middle left, upper middle, lower
/// middle and the centre.
pub fn emptiest_corner(series: &[(&str, Vec<(f64, f64)>)], y_range: (f64, f64)) -> SeriesLabelPosition {
    let named: Vec<&str> = series.iter().map(|s| s.0).filter(|n| !n.is_empty()).collect();
    let longest = named.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64;
    let width = ((LEGEND_CHAR_PX * longest + 50.0) / PLOT_AREA_PX.0 + LEGEND_CLEARANCE).min(1.0);
    let height = ((LEGEND_ROW_PX * named.len() as f64 + 15.0) / PLOT_AREA_PX.1 + LEGEND_CLEARANCE).min(1.0);
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.0, 1.0) };
    let (y0, y1) = if y_range.0 < y_range.1 { y_range } else { (0.0, 1.0) };
    // Every line as points in the unit square, 20 samples to a segment.
    let mut unit = Vec::new();
    for (_, values) in series {
        let points: Vec<(f64, f64)> = values
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(x, y)| ((x - x0) / (x1 - x0), (y - y0) / (y1 - y0)))
            .collect();
        unit.extend(points.iter().copied());
        for w in points.windows(2) {
            unit.extend((1..20).map(|k| {
                let t = k as f64 / 20.0;
                (w[0].0 + t * (w[1].0 - w[0].0), w[0].1 + t * (w[1].1 - w[0].1))
            }));
        }
    }
    let (right, left, centre) = ((1.0 - width, 1.0), (0.0, width), (0.5 - width / 2.0, 0.5 + width / 2.0));
    let (upper, lower, middle) = ((1.0 - height, 1.0), (0.0, height), (0.5 - height / 2.0, 0.5 + height / 2.0));
    let candidates = [
        (SeriesLabelPosition::UpperRight, right, upper),
        (SeriesLabelPosition::LowerRight, right, lower),
        (SeriesLabelPosition::UpperLeft, left, upper),
        (SeriesLabelPosition::LowerLeft, left, lower),
        (SeriesLabelPosition::MiddleRight, right, middle),
        (SeriesLabelPosition::MiddleLeft, left, middle),
        (SeriesLabelPosition::UpperMiddle, centre, upper),
        (SeriesLabelPosition::LowerMiddle, centre, lower),
        (SeriesLabelPosition::MiddleMiddle, centre, middle),
    ];
    let covered = |(xr, yr): ((f64, f64), (f64, f64))| {
        unit.iter().filter(|(x, y)| (xr.0..=xr.1).contains(x) && (yr.0..=yr.1).contains(y)).count()
    };
    let mut best = (SeriesLabelPosition::UpperRight, usize::MAX);
    for (position, xr, yr) in candidates {
        let n = covered((xr, yr));
        if n < best.1 {
            best = (position, n);
        }
    }
    best.0
}

/// An axis tick: whole numbers without decimals and with thousands separators (`100,000`),
/// others with at most three decimals, trailing zeros dropped (`0.25`).
pub fn tick_label(x: f64) -> String {
    if x.is_finite() && x == x.round() && x.abs() < 1e15 {
        hedge_run::budget::group_digits(x)
    } else {
        let text = format!("{x:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        if text == "-0" {
            "0".into()
        } else {
            text.into()
        }
    }
}

/// [`line_chart`] on an x-range × `y_range` frame with the legend at `legend` (a figure whose
/// points gather in one corner puts it in another); a series named "" has no legend entry.
pub fn line_chart_in(
    path: &Path,
    series: &[(&str, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    title: &str,
    y_range: (f64, f64),
    legend: SeriesLabelPosition,
) -> Result<()> {
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.0, 1.0) };
    let (y0, y1) = if y_range.0 < y_range.1 { y_range } else { (0.0, 1.0) };
    render(path, (900, 560), |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            // Room for the last x tick's label, centred on the frame's right edge.
            .margin_right(35)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| tick_label(*x))
            .y_label_formatter(&|y| tick_label(*y))
            .draw()
            .map_err(draw_err)?;
        for (k, (name, values)) in series.iter().enumerate() {
            let points: Vec<(f64, f64)> = values.iter().copied().filter(|p| p.1.is_finite()).collect();
            let drawn = chart
                .draw_series(LineSeries::new(points.clone(), Palette99::pick(k).stroke_width(2)))
                .map_err(draw_err)?;
            if !name.is_empty() {
                drawn.label(*name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], Palette99::pick(k).stroke_width(2))
                });
            }
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, Palette99::pick(k).filled())))
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.7))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        Ok(())
    })
}

/// HIB Figure 5: performance per η bin (bin 0 = most certain), one line per named series.
pub fn uncertainty_bins(path: &Path, series: &[(&str, &[f64])], title: &str) -> Result<()> {
    let points: Vec<(&str, Vec<(f64, f64)>)> =
        series.iter().map(|(name, v)| (*name, v.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect())).collect();
    line_chart(path, &points, "uncertainty bin (eta, low to high)", "performance", title)
}

/// A reliability diagram: the observed share of positives against the mean predicted
/// probability per bin, one line per named series, over the diagonal a calibrated model lies on.
/// Points are (mean prediction, observed frequency); non-finite ones (empty bins) are skipped.
pub fn reliability_diagram(path: &Path, series: &[(&str, Vec<(f64, f64)>)], title: &str) -> Result<()> {
    let mut lines = vec![("perfect calibration", vec![(0.0, 0.0), (1.0, 1.0)])];
    lines.extend(series.iter().map(|(name, points)| {
        (*name, points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect())
    }));
    line_chart_in(
        path,
        &lines,
        "mean predicted p(match) in the bin",
        "share of matching pairs",
        title,
        (0.0, 1.0),
        SeriesLabelPosition::UpperLeft,
    )
}

/// A set of embedded inputs as plain numbers: `components` Gaussians (or points) of `dim`
/// dimensions per input.
///
/// # Shapes
/// `mean` and `variance` are `[inputs, components, dim]` flattened row-major (`variance` all
/// zeros for point embeddings); `labels` is `[inputs]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingCloud {
    pub components: usize,
    pub dim: usize,
    pub mean: Vec<f32>,
    pub variance: Vec<f32>,
    pub labels: Vec<u32>,
}

impl EmbeddingCloud {
    /// Checks that the arrays agree with `components`, `dim` and the number of labels.
    pub fn check(&self) -> Result<()> {
        let want = self.labels.len() * self.components * self.dim;
        if self.components == 0 || self.dim == 0 {
            return Err(PlotError::Input { field: "components/dim", what: "must be at least 1".into() });
        }
        for (field, len) in [("mean", self.mean.len()), ("variance", self.variance.len())] {
            if len != want {
                return Err(PlotError::Input {
                    field,
                    what: format!(
                        "{len} values for {} inputs x {} components x {} dims = {want}",
                        self.labels.len(),
                        self.components,
                        self.dim
                    ),
                });
            }
        }
        Ok(())
    }

    fn at(&self, values: &[f32], input: usize, component: usize, axis: usize) -> f64 {
        f64::from(values[(input * self.components + component) * self.dim + axis])
    }

    /// Class centroids of the mean embeddings (averaged over components), first two dimensions
    /// (the second is 0 for D = 1), by label.
    pub fn centroids(&self) -> BTreeMap<u32, (f64, f64)> {
        let mut acc: BTreeMap<u32, (f64, f64, usize)> = BTreeMap::new();
        let c = self.components as f64;
        for (i, &label) in self.labels.iter().enumerate() {
            let e = acc.entry(label).or_default();
            for k in 0..self.components {
                e.0 += self.at(&self.mean, i, k, 0) / c;
                e.1 += if self.dim > 1 { self.at(&self.mean, i, k, 1) / c } else { 0.0 };
            }
            e.2 += 1;
        }
        acc.into_iter().map(|(l, (x, y, n))| (l, (x / n as f64, y / n as f64))).collect()
    }
}

/// HIB Figures 3, 4 and 7: a sample of `per_panel` inputs as 3σ ellipses (each mixture
/// component its own ellipse, the components of one input joined by a line) over the clean
/// class centroids, clean and corrupt side by side, in the first two embedding dimensions.
pub fn embedding_ellipses(
    path: &Path,
    clean: &EmbeddingCloud,
    corrupt: &EmbeddingCloud,
    per_panel: usize,
    title: &str,
) -> Result<()> {
    clean.check()?;
    corrupt.check()?;
    if clean.dim < 2 {
        return Err(PlotError::Input {
            field: "dim",
            what: format!("ellipse plots need D >= 2 (this model has D = {})", clean.dim),
        });
    }
    if clean.labels.is_empty() {
        return Err(PlotError::Input { field: "labels", what: "no inputs to draw".into() });
    }
    let cents = clean.centroids();
    let d = clean.dim;
    // A common frame: the centroids and the middle 98 % of the clean means, plus a margin.
    let quantiles = |axis: usize| {
        let mut v: Vec<f64> = clean.mean.iter().skip(axis).step_by(d).map(|&m| f64::from(m)).collect();
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
        let root = root.titled(title, ("sans-serif", 24)).map_err(draw_err)?;
        let areas = root.split_evenly((1, 2));
        for (area, (name, set)) in areas.iter().zip([("clean", clean), ("corrupt", corrupt)]) {
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{name} test images"), ("sans-serif", 20))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(draw_err)?;
            chart.configure_mesh().disable_mesh().draw().map_err(draw_err)?;
            let step = (set.labels.len() / per_panel.max(1)).max(1);
            for i in (0..set.labels.len()).step_by(step) {
                let col = colour(set.labels[i]);
                let centre = |k: usize| (set.at(&set.mean, i, k, 0), set.at(&set.mean, i, k, 1));
                for k in 0..set.components {
                    let (mx, my) = centre(k);
                    let (sx, sy) =
                        (3.0 * set.at(&set.variance, i, k, 0).sqrt(), 3.0 * set.at(&set.variance, i, k, 1).sqrt());
                    let outline: Vec<(f64, f64)> = (0..=48)
                        .map(|t| {
                            let a = t as f64 / 48.0 * std::f64::consts::TAU;
                            (mx + sx * a.cos(), my + sy * a.sin())
                        })
                        .collect();
                    chart.draw_series(std::iter::once(PathElement::new(outline, col.mix(0.5)))).map_err(draw_err)?;
                    if k > 0 {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![centre(k - 1), centre(k)],
                                col.mix(0.6),
                            )))
                            .map_err(draw_err)?;
                    }
                }
            }
            chart
                .draw_series(cents.iter().map(|(&l, &(x, y))| {
                    let r = 0.006 * (x1 - x0);
                    Rectangle::new([(x - r, y - r), (x + r, y + r)], colour(l).filled())
                }))
                .map_err(draw_err)?;
            chart
                .draw_series(cents.iter().map(|(&l, &(x, y))| {
                    Text::new(format!("{l:0w$}", w = digits_of(&classes)), (x, y), ("sans-serif", 11).into_font())
                }))
                .map_err(draw_err)?;
        }
        Ok(())
    })
}

fn digits_of(classes: &[u32]) -> usize {
    classes.iter().max().map_or(1, |&m| m.max(1).to_string().len()).max(2)
}

/// HIB Figure 11 (the first arXiv version's numbering): class centroids of a D = 1 embedding on
/// the number line, labelled and coloured by ones digit. `centroids` holds (class label,
/// position) in any order; `title` is the caption (the caller states the ordering's score).
pub fn number_line(path: &Path, centroids: &[(u32, f64)], title: &str) -> Result<()> {
    let mut order = centroids.to_vec();
    order.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (lo, hi) = (order.first().map_or(0.0, |o| o.1), order.last().map_or(1.0, |o| o.1));
    let pad = 0.05 * (hi - lo).max(1e-3);
    render::<PlotError>(path, (1400, 300), |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(30)
            .build_cartesian_2d(lo - pad..hi + pad, -1f64..1.0)
            .map_err(draw_err)?;
        chart.configure_mesh().disable_y_axis().disable_mesh().draw().map_err(draw_err)?;
        for (k, &(l, x)) in order.iter().enumerate() {
            let y = if k % 2 == 0 { 0.3 } else { -0.3 };
            let col = Palette99::pick((l % 10) as usize);
            chart.draw_series(std::iter::once(Circle::new((x, 0.0), 4, col.filled()))).map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{l:02}"),
                    (x, y),
                    ("sans-serif", 12).into_font().color(&col),
                )))
                .map_err(draw_err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_drop_the_decimals_of_whole_numbers_and_group_thousands() {
        assert_eq!(tick_label(10000.0), "10,000");
        assert_eq!(tick_label(100000.0), "100,000");
        assert_eq!(tick_label(-1234567.0), "-1,234,567");
        assert_eq!(tick_label(999.0), "999");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(0.1 + 0.2), "0.3");
        assert_eq!(tick_label(-0.0001), "0");
    }

    /// Lines along the top and along the bottom leave the middle of the sides free; a line
    /// along the top alone sends the legend down; nothing in the way leaves it upper right.
    #[test]
    fn the_legend_goes_where_no_line_runs() {
        let flat = |y: f64| -> Vec<(f64, f64)> { (0..=10).map(|k| (1000.0 * k as f64, y)).collect() };
        let top_and_bottom = [("AP, clean", flat(0.96)), ("AP, corrupt", flat(0.80)), ("KNN, corrupt", flat(0.15))];
        assert_eq!(emptiest_corner(&top_and_bottom, (0.0, 1.0)), SeriesLabelPosition::MiddleRight);
        assert_eq!(emptiest_corner(&[("a", flat(0.99))], (0.0, 1.0)), SeriesLabelPosition::LowerRight);
        assert_eq!(emptiest_corner(&[("a", vec![(0.0, 0.5)])], (0.0, 1.0)), SeriesLabelPosition::UpperRight);
    }

    #[test]
    fn centroids_average_components_then_inputs() {
        // Two inputs of class 7 (two components each) and one of class 3, D = 2.
        let cloud = EmbeddingCloud {
            components: 2,
            dim: 2,
            mean: vec![0.0, 0.0, 2.0, 2.0, 4.0, 0.0, 4.0, 0.0, 1.0, -1.0, 1.0, -1.0],
            variance: vec![0.0; 12],
            labels: vec![7, 7, 3],
        };
        let c = cloud.centroids();
        assert_eq!(c[&7], (2.5, 0.5));
        assert_eq!(c[&3], (1.0, -1.0));
    }

    #[test]
    fn mismatched_arrays_and_one_dimension_are_refused_not_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let bad =
            EmbeddingCloud { components: 1, dim: 2, mean: vec![0.0; 3], variance: vec![0.0; 4], labels: vec![1, 2] };
        let e = embedding_ellipses(&dir.path().join("x.png"), &bad, &bad, 10, "t").unwrap_err();
        assert!(e.to_string().contains("'mean'"), "{e}");
        let line =
            EmbeddingCloud { components: 1, dim: 1, mean: vec![0.0, 1.0], variance: vec![0.0; 2], labels: vec![1, 2] };
        let e = embedding_ellipses(&dir.path().join("x.png"), &line, &line, 10, "t").unwrap_err();
        assert!(e.to_string().contains("D >= 2"), "{e}");
        assert!(!dir.path().join("x.png").exists());
    }

    #[test]
    fn a_line_chart_is_a_png_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("curve.png");
        line_chart(&path, &[("a", vec![(0.0, 0.1), (1.0, f64::NAN), (2.0, 0.9)])], "x", "y", "t").unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
