//! HIB figures: embedded sets handed to `hedge-plot` as plain numbers.

use std::path::Path;

use hedge_plot::EmbeddingCloud;
use tch::Kind;

use crate::Result;
use hedge_embed::EmbeddedSet;

/// The means, variances (zeros for point embeddings) and labels of an embedded set.
pub fn cloud(set: &EmbeddedSet) -> EmbeddingCloud {
    let size = set.embedding.mean.size();
    let flat = |t: &tch::Tensor| Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).expect("float tensor");
    let mean = flat(&set.embedding.mean);
    let variance = set.embedding.variance.as_ref().map_or_else(|| vec![0.0; mean.len()], flat);
    EmbeddingCloud { components: size[1] as usize, dim: size[2] as usize, mean, variance, labels: set.labels.clone() }
}

/// Figures 3, 4 and 7: `per_panel` test images as 3σ ellipses over the clean class centroids,
/// clean and corrupt side by side ([`hedge_plot::embedding_ellipses`]).
pub fn embedding_ellipses(
    path: &Path,
    clean: &EmbeddedSet,
    corrupt: &EmbeddedSet,
    per_panel: usize,
    title: &str,
) -> Result<()> {
    Ok(hedge_plot::embedding_ellipses(path, &cloud(clean), &cloud(corrupt), per_panel, title)?)
}

/// The reliability diagrams of p(match) of named evaluations, one line each
/// ([`hedge_plot::reliability_diagram`]).
pub fn reliability_figure(
    path: &Path,
    diagrams: &[(&str, &hedge_eval::ReliabilityDiagram)],
    title: &str,
) -> Result<()> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = diagrams
        .iter()
        .map(|(name, d)| (*name, d.bins.iter().map(|b| (b.mean_probability, b.observed_frequency)).collect()))
        .collect();
    Ok(hedge_plot::reliability_diagram(path, &series, title)?)
}
