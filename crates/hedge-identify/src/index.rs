//! Identification against a gallery that knows when it is unsure: an approximate-nearest-
//! neighbour index (HNSW, [`hedge_ann::Hnsw`]) over the embedding means, or over PCME++'s
//! closed-form sampled distance ([`SearchSpace`]), proposes candidates, the exact
//! match probability p(m | probe, candidate) re-ranks them (as `hib eval` does), and a probe
//! abstains when its self-mismatch η lies above a threshold chosen, on labelled validation
//! probes, for a target risk (the risk–coverage curve of `hib eval`).
//!
//! An index is a folder: `index.json` (what was indexed, with which run, the validation curve
//! and the SHA-256 of every other file), `gallery.safetensors` (`mean`, `variance`, `eta`,
//! `label`), `ann.safetensors` (the HNSW graph with its points), and
//! `validation_risk_coverage.csv`. It is written to a temporary sibling folder and renamed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use hedge_ann::{recall_at, AnnConfig, Hnsw};
use hedge_data::{Corruption, ImageDataset, ImageSet, NDigitSplit};
use hedge_run::rundir::{sha256_file, SealedFiles};
use hedge_run::undefined::{explain_nulls, NullReason};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::{IdentifyError, Result};
use hedge_embed::distribution::{index_tensor, Embedding};
use hedge_embed::embed::{embed_dataset, EmbedOptions, EmbeddedSet};
use hedge_embed::evaluate::MatchEstimator;
use hedge_embed::loss::{ClosedForm, MatchHead, Matching, Search};
use hedge_embed::run::RunDir;
use hedge_embed::train::{load_model, weights_path};
use hedge_embed::ModelKind;

/// The index's description, the last file written.
pub const INDEX_FILE: &str = "index.json";
/// The embedded gallery.
pub const GALLERY_FILE: &str = "gallery.safetensors";
/// The validation probes' η and correctness in η order, with the curve's coverage and risk.
pub const VALIDATION_CSV: &str = "validation_risk_coverage.csv";
/// The HNSW graph over the gallery's points in its [`SearchSpace`].
pub const ANN_FILE: &str = "ann.safetensors";
/// 4: the search options name the space the graph searches ([`SearchSpace`]); 3: the graph is
/// hedge's own (`ann.safetensors`); format 2 held `hnsw_rs` dumps.
const INDEX_FORMAT: u32 = 4;

/// The exact `k` nearest points of every query, nearest first (ties by index): the reference the
/// ANN stage's recall is measured against, on libtorch (a matrix product per chunk of queries,
/// fast enough for millions of points; [`hedge_ann::exact_nearest`] is the plain loop).
pub fn exact_nearest(points: &[f32], dim: usize, queries: &[f32], k: usize) -> Result<Vec<Vec<usize>>> {
    let n = (points.len() / dim) as i64;
    let q = (queries.len() / dim) as i64;
    let k = (k as i64).min(n);
    let gallery = Tensor::from_slice(points).view([n, dim as i64]);
    let gallery_sq = gallery.square().sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
    let mut out = Vec::with_capacity(q as usize);
    // Queries in chunks so that the [chunk, n] distance matrix stays near 400 MB for n = 10⁶.
    let chunk = (100_000_000 / n.max(1)).clamp(1, 4096);
    let mut start = 0;
    while start < q {
        let len = chunk.min(q - start);
        let query = Tensor::from_slice(&queries[(start as usize) * dim..((start + len) as usize) * dim])
            .view([len, dim as i64]);
        // ‖x − y‖² = ‖x‖² − 2 x·y + ‖y‖²; the query's own norm does not change the order.
        let d2 = gallery_sq.unsqueeze(0) - query.matmul(&gallery.tr()) * 2.0;
        let (_, idx) = d2.topk(k, 1, false, true);
        let idx: Vec<i64> = Vec::<i64>::try_from(idx.flatten(0, -1))?;
        out.extend(idx.chunks(k as usize).map(|row| row.iter().map(|&i| i as usize).collect()));
        start += len;
    }
    Ok(out)
}

/// What ranks probes from sure to unsure for abstention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum UncertaintyScore {
    /// The probe's self-mismatch η (Eq. 9 of Oh et al.): uncertainty of the input alone.
    #[default]
    Eta,
    /// 1 − (p₁ − p₂), where p₁ and p₂ are the match probabilities of the best two identities
    /// among the candidates (p₂ = 0 when they hold one): uncertainty of the decision.
    Margin,
}

impl UncertaintyScore {
    pub fn name(self) -> &'static str {
        match self {
            UncertaintyScore::Eta => "eta",
            UncertaintyScore::Margin => "margin",
        }
    }

    /// This score of a probe with self-mismatch `eta` and ranked identity probabilities.
    pub fn of(self, eta: f64, ranked: &[f64]) -> f64 {
        match self {
            UncertaintyScore::Eta => eta,
            UncertaintyScore::Margin => {
                let p1 = ranked.first().copied().unwrap_or(0.0);
                let p2 = ranked.get(1).copied().unwrap_or(0.0);
                1.0 - (p1 - p2)
            }
        }
    }
}

/// When a probe abstains, from its uncertainty score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum Abstention {
    /// The target risk holds at full coverage: answer every probe.
    AcceptAll,
    /// Answer probes whose uncertainty is at most `threshold`, abstain above.
    AbstainAbove { threshold: f64 },
    /// No coverage reaches the target risk on the validation probes: abstain on every probe.
    AbstainAll,
}

impl Abstention {
    pub fn abstains(&self, uncertainty: f64) -> bool {
        match *self {
            Abstention::AcceptAll => false,
            Abstention::AbstainAbove { threshold } => uncertainty > threshold,
            Abstention::AbstainAll => true,
        }
    }
}

/// Validation probes ranked by η and the rule chosen on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Where the validation probes came from.
    pub source: String,
    /// What ranks the probes.
    pub score: UncertaintyScore,
    /// That score of every validation probe, ascending.
    pub uncertainty: Vec<f64>,
    /// Whether each probe's top identity was right, in the same order.
    pub correct: Vec<bool>,
    pub target_risk: f64,
    pub rule: Abstention,
    /// The fraction of validation probes the rule answers, and the error rate among them.
    pub coverage: f64,
    pub risk: f64,
}

impl Calibration {
    /// Ranks `(uncertainty, correct)` by uncertainty and chooses the largest coverage whose risk
    /// (error rate among the answered probes) is at most `target_risk`. Coverage only changes
    /// between distinct values, so a threshold never splits probes of equal uncertainty.
    pub fn choose(
        source: String,
        score: UncertaintyScore,
        uncertainty: &[f64],
        correct: &[bool],
        target_risk: f64,
    ) -> Result<Self> {
        if uncertainty.is_empty() || uncertainty.len() != correct.len() {
            return Err(IdentifyError::invalid(
                "validation",
                uncertainty.len(),
                "need at least one validation probe with a known identity",
            ));
        }
        let mut order: Vec<usize> = (0..uncertainty.len()).collect();
        order.sort_by(|&i, &j| uncertainty[i].total_cmp(&uncertainty[j]));
        let mut calibration = Calibration {
            source,
            score,
            uncertainty: order.iter().map(|&i| uncertainty[i]).collect(),
            correct: order.iter().map(|&i| correct[i]).collect(),
            target_risk,
            rule: Abstention::AbstainAll,
            coverage: 0.0,
            risk: 0.0,
        };
        calibration.rechoose(target_risk)?;
        Ok(calibration)
    }

    /// The rule for another target risk on the same validation probes.
    pub fn rechoose(&mut self, target_risk: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&target_risk) {
            return Err(IdentifyError::invalid("target_risk", target_risk, "a risk is an error rate in [0, 1]"));
        }
        let n = self.uncertainty.len();
        let mut errors = 0usize;
        let mut best: Option<(usize, f64)> = None;
        for k in 1..=n {
            errors += usize::from(!self.correct[k - 1]);
            let cut = k == n || self.uncertainty[k] > self.uncertainty[k - 1];
            let risk = errors as f64 / k as f64;
            if cut && risk <= target_risk {
                best = Some((k, risk));
            }
        }
        self.target_risk = target_risk;
        (self.rule, self.coverage, self.risk) = match best {
            Some((k, risk)) if k == n => (Abstention::AcceptAll, 1.0, risk),
            Some((k, risk)) => {
                (Abstention::AbstainAbove { threshold: self.uncertainty[k - 1] }, k as f64 / n as f64, risk)
            }
            None => (Abstention::AbstainAll, 0.0, 0.0),
        };
        Ok(())
    }

    /// `uncertainty,correct,coverage,risk` per validation probe, in uncertainty order.
    pub fn csv(&self) -> String {
        let mut text = String::from("uncertainty,correct,coverage,risk\n");
        let mut errors = 0;
        for (k, (&u, &correct)) in self.uncertainty.iter().zip(&self.correct).enumerate() {
            errors += usize::from(!correct);
            let n = k + 1;
            text.push_str(&format!(
                "{u},{},{},{}\n",
                u8::from(correct),
                n as f64 / self.uncertainty.len() as f64,
                errors as f64 / n as f64
            ));
        }
        text
    }
}

/// Where the ANN stage looks for a probe's candidates. Reads and writes as `"means"` or the
/// name of a registered loss's closed form with an exact search ([`hedge_embed::loss::Search`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SearchSpace {
    /// Euclidean distance between component means: one graph point per component of every
    /// item, and an item is as near as its nearest component. A probe's variance never changes
    /// which items are found.
    Means,
    /// A closed form's own points ([`hedge_embed::loss::Search::Exact`]): one graph point per
    /// item, whose Euclidean order is the closed form's ranking, so the graph finds its exact
    /// neighbours.
    Exact(&'static ClosedForm),
}

impl PartialEq for SearchSpace {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for SearchSpace {}

impl TryFrom<String> for SearchSpace {
    type Error = String;
    fn try_from(name: String) -> std::result::Result<Self, String> {
        SearchSpace::named(&name).map_err(|e| e.to_string())
    }
}

impl From<SearchSpace> for String {
    fn from(space: SearchSpace) -> String {
        space.name().to_string()
    }
}

impl SearchSpace {
    pub fn name(self) -> &'static str {
        match self {
            SearchSpace::Means => "means",
            SearchSpace::Exact(form) => form.name,
        }
    }

    /// `"means"` or the closed form called `name`, if its search is exact.
    pub fn named(name: &str) -> Result<SearchSpace> {
        if name == "means" {
            return Ok(SearchSpace::Means);
        }
        let exact: Vec<&str> = exact_forms().map(|f| f.name).collect();
        exact_forms().find(|f| f.name == name).map(SearchSpace::Exact).ok_or_else(|| {
            IdentifyError::invalid(
                "candidates_by",
                name,
                format!(
                    "candidates are found by \"means\" or {}",
                    exact.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }

    /// Where a model that scores by `matching` finds its candidates: its closed form's exact
    /// points where it has them, else the means.
    pub fn for_matching(matching: Matching) -> SearchSpace {
        match matching.closed_form() {
            Some(form) if matches!(form.search, Search::Exact { .. }) => SearchSpace::Exact(form),
            _ => SearchSpace::Means,
        }
    }

    /// The exact search's point functions.
    fn exact_points(form: &ClosedForm) -> (PointsOf, PointsOf) {
        match form.search {
            Search::Exact { gallery_points, probe_points, .. } => (gallery_points, probe_points),
            Search::Means => unreachable!("SearchSpace::Exact holds only closed forms with an exact search"),
        }
    }

    /// Dimension of the graph's points for embeddings of dimension `dim`.
    pub fn point_dim(self, dim: usize) -> usize {
        match self {
            SearchSpace::Means => dim,
            SearchSpace::Exact(form) => match form.search {
                Search::Exact { point_dim, .. } => point_dim(dim),
                Search::Means => dim,
            },
        }
    }

    /// Graph points per input of `components` components.
    pub fn points_per_item(self, components: usize) -> usize {
        match self {
            SearchSpace::Means => components,
            SearchSpace::Exact(_) => 1,
        }
    }

    /// The graph's points for gallery items, row by row.
    ///
    /// # Shapes
    /// `gallery.mean`: `[N, C, D]`; returns `[N * points_per_item(C) * point_dim(D)]`.
    pub fn gallery_points(self, gallery: &Embedding) -> Result<Vec<f32>> {
        match self {
            SearchSpace::Means => component_rows(&gallery.mean),
            SearchSpace::Exact(form) => component_rows(&(Self::exact_points(form).0)(gallery)),
        }
    }

    /// The query points of probes, row by row (see [`SearchSpace::gallery_points`]).
    pub fn probe_points(self, probes: &Embedding) -> Result<Vec<f32>> {
        match self {
            SearchSpace::Means => component_rows(&probes.mean),
            SearchSpace::Exact(form) => component_rows(&(Self::exact_points(form).1)(probes)),
        }
    }
}

/// A closed form's search points of a set of embeddings.
type PointsOf = fn(&Embedding) -> Tensor;

/// The registered closed forms whose search is exact.
fn exact_forms() -> impl Iterator<Item = &'static ClosedForm> {
    hedge_embed::losses::closed_forms().filter(|f| matches!(f.search, Search::Exact { .. }))
}

/// How candidates are proposed and scored.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchOptions {
    /// Where the ANN stage looks for candidates.
    pub space: SearchSpace,
    /// Gallery items per probe that the ANN stage proposes and the match probability re-ranks.
    pub candidates: usize,
    /// Identities reported per probe.
    pub top_k: usize,
    pub estimator: MatchEstimator,
    /// Monte-Carlo samples per probe for η.
    pub eta_samples: i64,
    /// Seed of the sampling noise (η, Monte-Carlo match probabilities).
    pub seed: i64,
}

impl SearchOptions {
    /// Deterministic quadrature up to D = 3, at the node count whose measured error is within
    /// 10⁻³ ([`hedge_embed::evaluate::quadrature_points`]); Monte Carlo with 16 samples above.
    pub fn for_dim(dim: usize) -> Self {
        let estimator = if dim <= 3 {
            MatchEstimator::Quadrature { points: hedge_embed::evaluate::quadrature_points(dim) }
        } else {
            MatchEstimator::MonteCarlo { samples: 16 }
        };
        SearchOptions { space: SearchSpace::Means, candidates: 100, top_k: 5, estimator, eta_samples: 8, seed: 0 }
    }

    /// The options for a model trained with `config`: a model whose loss has a closed form is
    /// scored by it and searched in its space ([`SearchSpace::for_matching`]); any other as
    /// [`SearchOptions::for_dim`].
    pub fn for_model(config: &hedge_embed::HibConfig) -> Self {
        let options = Self::for_dim(config.model.dim);
        let matching = hedge_embed::pair_loss::PairLoss::matching(config.loss.kind.loss());
        SearchOptions {
            space: SearchSpace::for_matching(matching),
            estimator: MatchEstimator::for_matching(matching, options.estimator),
            ..options
        }
    }

    /// Finds candidates in `space` (the exact re-rank is unchanged).
    pub fn with_space(mut self, space: SearchSpace) -> Self {
        self.space = space;
        self
    }

    pub fn with_candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates;
        self
    }

    pub fn with_top_k(mut self, top_k: usize) -> Self {
        self.top_k = top_k;
        self
    }

    pub fn check(&self) -> Result<()> {
        if self.top_k == 0 {
            return Err(IdentifyError::invalid("top_k", 0, "report at least 1 identity per probe"));
        }
        // Per probe of a chunk of 250: its candidates' ids, means and match probabilities (about
        // 1 KB each with the re-rank's intermediates) and its top-k identities.
        hedge_run::Footprint::new("search: the candidates of 250 probes", |v| 250.0 * (v[0] * 1024.0 + v[1] * 64.0))
            .knob("--candidates", self.candidates as f64, self.top_k as f64)
            .knob("--top-k", self.top_k as f64, 1.0)
            .check()?;
        if self.candidates < self.top_k {
            return Err(IdentifyError::invalid(
                "candidates",
                self.candidates,
                format!("must be at least top_k ({}): the re-rank picks identities among them", self.top_k),
            ));
        }
        if self.eta_samples < 1 {
            return Err(IdentifyError::invalid("eta_samples", self.eta_samples, "give at least 1"));
        }
        Ok(())
    }
}

/// `index.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexManifest {
    pub format: u32,
    /// The run whose model embedded the gallery (absolute path when it was built).
    pub run: PathBuf,
    /// SHA-256 of the weights used: a search with other weights is refused.
    pub weights_sha256: String,
    pub model: ModelKind,
    pub dim: usize,
    pub components: usize,
    /// `[C, H, W]` of the images the model takes.
    pub input_shape: [usize; 3],
    pub gallery_source: PathBuf,
    /// Identities, by gallery label.
    pub class_names: Vec<String>,
    /// Per gallery item: its label (an index into `class_names`) is in `gallery.safetensors`;
    /// this is where the image came from.
    pub item_names: Vec<String>,
    pub ann: AnnConfig,
    pub search: SearchOptions,
    pub calibration: Calibration,
    /// Seconds to embed the gallery, and to build the graph.
    pub embed_seconds: f64,
    pub build_seconds: f64,
    /// Every other file of the index, checked before it is read.
    pub files: SealedFiles,
    /// SHA-256 of this description as written with this field empty: an edited `index.json`
    /// (renamed identities, another `dim`, an emptied `files`) is refused, not trusted. It
    /// catches damage and edits, not a forger who recomputes it.
    #[serde(default)]
    pub sha256: String,
}

impl IndexManifest {
    /// The pretty JSON of `self` with [`Self::sha256`] empty, and that JSON's SHA-256.
    fn self_hash(&self) -> (String, String) {
        let mut blank = self.clone();
        blank.sha256.clear();
        let text = serde_json::to_string_pretty(&blank).expect("an index description serialises");
        let hash = hedge_run::rundir::sha256_hex(text.as_bytes());
        (text, hash)
    }

    /// What an index records about the run whose model embeds its gallery, with these settings:
    /// the gallery's own fields (source, identities, items, timings) empty, and a provisional
    /// abstention rule that the validation probes' curve replaces ([`Calibration::choose`]).
    pub fn for_run(
        run_path: &Path,
        ann: AnnConfig,
        search: SearchOptions,
        score: UncertaintyScore,
        target_risk: f64,
    ) -> Result<Self> {
        ann.check()?;
        search.check()?;
        let run = RunDir::open(run_path)?;
        let config = run.read_config()?.hib;
        Ok(IndexManifest {
            format: INDEX_FORMAT,
            run: std::fs::canonicalize(run_path).unwrap_or_else(|_| run_path.to_path_buf()),
            weights_sha256: sha256_file(&weights_path(&run, &config))?,
            model: config.model.embedding.kind(),
            dim: config.model.dim,
            components: config.model.embedding.components(),
            input_shape: config.input_shape(),
            gallery_source: PathBuf::new(),
            class_names: Vec::new(),
            item_names: Vec::new(),
            ann,
            search,
            calibration: Calibration::choose(String::new(), score, &[0.0], &[true], target_risk)?,
            embed_seconds: 0.0,
            build_seconds: 0.0,
            files: SealedFiles::default(),
            sha256: String::new(),
        })
    }

    /// Reads `index.json`'s text (`path` names it in errors) and checks it: the format, its own
    /// SHA-256, that it lists exactly the index's files, and its settings as if typed.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let manifest: IndexManifest = serde_json::from_str(text).map_err(|e| {
            IdentifyError::input(path, format!("is not an index description ({e}); rebuild it with `hedge hib index`"))
        })?;
        if manifest.format != INDEX_FORMAT {
            return Err(IdentifyError::input(
                path,
                format!("is index format {}, this hedge reads {INDEX_FORMAT}; rebuild it", manifest.format),
            ));
        }
        // A fuzzing build skips the hash, which no mutation would match, to reach what follows.
        if !cfg!(fuzzing) && manifest.self_hash().1 != manifest.sha256 {
            return Err(IdentifyError::input(
                path,
                "was edited or damaged after `hedge hib index` wrote it (its SHA-256 field no longer matches its \
                 contents); rebuild the index with `hedge hib index`",
            ));
        }
        if let Err(why) = manifest.files.lists_exactly(&INDEX_FOLDER_FILES[1..]) {
            return Err(IdentifyError::input(path, format!("{why}; rebuild the index")));
        }
        // Settings read back are checked as if typed (an edited index was refused above; this
        // guards an index written by a hedge with other limits).
        manifest.ann.check()?;
        manifest.search.check()?;
        Ok(manifest)
    }

    /// Fuzz target: `index.json` bytes through [`Self::parse`]; `true` when accepted.
    pub fn fuzz(bytes: &[u8]) -> bool {
        Self::parse(&String::from_utf8_lossy(bytes), Path::new("index.json")).is_ok()
    }

    /// `index.json`'s text, its own hash filled in.
    fn sealed_json(&self) -> String {
        let mut sealed = self.clone();
        sealed.sha256 = self.self_hash().1;
        serde_json::to_string_pretty(&sealed).expect("an index description serialises")
    }
}

/// What [`build_index`] needs besides the run and the gallery.
#[derive(Debug, Clone)]
pub struct IndexRequest {
    pub ann: AnnConfig,
    pub search: SearchOptions,
    /// Labelled validation probes for the abstention rule; without them every gallery image is a
    /// probe against the rest (leave one out).
    pub validation: Option<ImageSet>,
    pub target_risk: f64,
    pub score: UncertaintyScore,
}

/// The searchable part of an index: the graph over the component means, the embedded gallery and
/// its labels. An index folder loads as one; so does each shard of a sharded gallery
/// ([`crate::shards`]), on a machine that never loads the model.
pub struct Gallery {
    pub manifest: IndexManifest,
    ann: Hnsw,
    embedding: Embedding,
    labels: Vec<u32>,
}

/// What decides: the index's settings and abstention rule, the model that embeds probes and
/// its match head. Applied once per probe, whether the candidates come from one gallery or were
/// gathered from the shards of one.
pub struct Rules {
    pub manifest: IndexManifest,
    matcher: MatchHead,
    net: hedge_embed::HibNet,
    _vars: tch::nn::VarStore,
    device: Device,
}

/// A gallery loaded with its graph and the model that embeds probes.
pub struct Identifier {
    pub rules: Rules,
    pub gallery: Gallery,
}

/// Gallery rows a decision looks at (a whole gallery, or candidates gathered from shards) and,
/// per probe, the rows its search proposed, nearest first.
pub struct Candidates<'a> {
    /// `[N, C, D]` means (and variances) of the rows.
    pub embedding: &'a Embedding,
    /// Identity of each row (an index into the manifest's `class_names`).
    pub labels: &'a [u32],
    /// Where each row's image came from.
    pub item_names: &'a [String],
    pub proposals: &'a [Vec<usize>],
}

/// A probe's identities best first: (gallery label, probability of its best image, that image).
type RankedIdentities = Vec<(u32, f64, usize)>;

/// One identity proposed for a probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityMatch {
    pub identity: String,
    /// p(m | probe, best gallery image of this identity).
    pub probability: f64,
    /// That gallery image.
    pub gallery_item: String,
}

/// The answer for one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub probe: String,
    /// The probe's own label, when the probe set has one (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub eta: f64,
    /// p₁ − p₂ of the best two identities (p₁ when the candidates hold one).
    pub margin: f64,
    pub abstained: bool,
    /// The top identity; absent when abstaining.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<String>,
    /// Identities best first (reported even when abstaining, for inspection).
    pub matches: Vec<IdentityMatch>,
}

/// Numbers over a labelled probe set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSummary {
    pub probes: usize,
    /// Probes whose label is an identity of the gallery (the others can only be answered wrongly).
    pub known_identity: usize,
    /// Top-1 identification accuracy over every probe (full coverage).
    pub accuracy: f64,
    /// The true identity among the `top_k` reported.
    pub top_k_accuracy: f64,
    pub top_k: usize,
    pub rule: Abstention,
    pub target_risk: f64,
    /// Fraction of probes answered, and the accuracy among them.
    pub coverage: f64,
    pub accuracy_answered: Option<f64>,
    /// ANN recall@10 of gallery items against exact search by mean distance; `None` when the
    /// exact search was skipped.
    pub ann_recall_at_10: Option<f64>,
    /// For a model scored by a closed form whose candidates are found by the means: the share of
    /// the closed form's exact top 10 among the proposed candidates (the re-rank can recover no
    /// other). Absent for other models, and where the exact search was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_recall_at_10: Option<f64>,
    pub probes_per_second: f64,
    /// How well each uncertainty score ranks the labelled probes' top-1 errors: η (stochastic
    /// models) and the margin (every model). Empty in summaries written before it was measured.
    #[serde(default)]
    pub selective: Vec<SelectiveQuality>,
    /// Why a field above is `null`.
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

/// Selective identification of labelled probes ranked by one uncertainty score, most certain
/// first: the area under its risk–coverage curve (lower is better; a score that knows nothing
/// has the full-coverage error rate) and its ROC AUC and average precision for the wrong
/// answers (`None` where every answer is right or every one wrong).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectiveQuality {
    pub score: UncertaintyScore,
    pub aurc: f64,
    pub error_detection: Option<hedge_eval::ErrorDetection>,
}

impl SelectiveQuality {
    /// The quality of ranking by `score` of `results` whose label is `Some`, top-1 judged;
    /// `None` when there are none.
    pub fn of(results: &[ProbeResult], score: UncertaintyScore) -> Option<Self> {
        let labelled: Vec<&ProbeResult> = results.iter().filter(|r| r.label.is_some()).collect();
        let uncertainty: Vec<f64> = labelled
            .iter()
            .map(|r| match score {
                UncertaintyScore::Eta => r.eta,
                UncertaintyScore::Margin => 1.0 - r.margin,
            })
            .collect();
        let correct: Vec<bool> = labelled.iter().map(|r| top1_correct(r)).collect();
        let aurc = hedge_eval::risk_coverage(&uncertainty, &correct).ok()?.aurc;
        Some(SelectiveQuality {
            score,
            aurc,
            error_detection: hedge_eval::error_detection(&uncertainty, &correct).ok(),
        })
    }
}

/// Whether a probe's best identity is its label.
fn top1_correct(r: &ProbeResult) -> bool {
    r.matches.first().is_some_and(|m| Some(&m.identity) == r.label.as_ref())
}

/// Why a search reports no ANN recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecallSkipped {
    /// The exhaustive reference would take more than 10⁹ distances.
    TooLarge,
    /// The gallery is split across shards; no machine holds all of it.
    Sharded,
}

fn check_shape(images: &ImageSet, shape: [usize; 3], role: &str) -> Result<()> {
    let got = [images.channels, images.height, images.width];
    if got != shape {
        return Err(IdentifyError::input(
            &images.source,
            format!(
                "{role} images are {} x {} x {} (C x H x W) but the run's model takes {} x {} x {}; resize them \
                 (or train on images of this size)",
                got[0], got[1], got[2], shape[0], shape[1], shape[2]
            ),
        ));
    }
    Ok(())
}

/// Flattens `[N, C, D]` component means to `[N * C, D]` rows (row `i * C + c`).
fn component_rows(mean: &Tensor) -> Result<Vec<f32>> {
    Ok(Vec::<f32>::try_from(mean.to_kind(Kind::Float).flatten(0, -1))?)
}

fn embed_images(
    net: &hedge_embed::HibNet,
    images: &ImageSet,
    device: Device,
    options: &SearchOptions,
) -> Result<EmbeddedSet> {
    let data = ImageDataset::from_images(images.clone(), NDigitSplit::TestUnseen);
    Ok(embed_dataset(
        net,
        &data,
        &Corruption::Clean,
        device,
        EmbedOptions { batch: 500, samples: options.eta_samples, seed: options.seed },
    )?)
}

impl Gallery {
    /// The gallery of an embedding (`[N, C, D]` means, variances unless the model is a point)
    /// with each item's identity (an index into `manifest.class_names`) and name
    /// (`manifest.item_names`): the graph is built over its points in the manifest's
    /// [`SearchSpace`] with the manifest's settings, and its time recorded as `build_seconds`.
    pub fn from_embedding(mut manifest: IndexManifest, embedding: Embedding, labels: Vec<u32>) -> Result<Gallery> {
        let n = labels.len();
        let want = [n as i64, manifest.components as i64, manifest.dim as i64];
        if embedding.mean.size() != want || embedding.variance.as_ref().is_some_and(|v| v.size() != want) {
            return Err(IdentifyError::invalid(
                "embedding",
                format!("{:?}", embedding.mean.size()),
                format!("means (and variances) of {n} items must be [{n}, {}, {}]", manifest.components, manifest.dim),
            ));
        }
        if manifest.item_names.len() != n {
            return Err(IdentifyError::invalid(
                "item_names",
                manifest.item_names.len(),
                format!("name each of the {n} items"),
            ));
        }
        if let Some(&bad) = labels.iter().find(|&&l| l as usize >= manifest.class_names.len()) {
            return Err(IdentifyError::invalid(
                "labels",
                bad,
                format!("labels index the {} identities of class_names", manifest.class_names.len()),
            ));
        }
        let start = Instant::now();
        let space = manifest.search.space;
        let ann = Hnsw::build(&space.gallery_points(&embedding)?, space.point_dim(manifest.dim), &manifest.ann)?;
        manifest.build_seconds = start.elapsed().as_secs_f64();
        Ok(Gallery { manifest, ann, embedding, labels })
    }

    /// Gallery items.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Resident bytes of the graph (its points included).
    pub fn memory_bytes(&self) -> usize {
        self.ann.memory_bytes()
    }

    /// Every item as a candidate row, with `proposals` over them.
    pub fn view<'a>(&'a self, proposals: &'a [Vec<usize>]) -> Candidates<'a> {
        Candidates {
            embedding: &self.embedding,
            labels: &self.labels,
            item_names: &self.manifest.item_names,
            proposals,
        }
    }

    /// The `[n, C, D]` rows of `items` (means, and variances unless the model is a point).
    pub fn rows(&self, items: &[usize]) -> Embedding {
        self.embedding.select_rows(&index_tensor(items))
    }

    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// The items `items` as a gallery of their own: their rows, labels and names, and a graph
    /// built over their points with the same settings (a shard).
    pub fn subset(&self, items: &[usize]) -> Result<Gallery> {
        if let Some(&bad) = items.iter().find(|&&i| i >= self.len()) {
            return Err(IdentifyError::invalid("items", bad, format!("the gallery holds {} items", self.len())));
        }
        let mut manifest = self.manifest.clone();
        manifest.item_names = items.iter().map(|&i| self.manifest.item_names[i].clone()).collect();
        manifest.files.clear();
        manifest.sha256.clear();
        Gallery::from_embedding(manifest, self.rows(items), items.iter().map(|&i| self.labels[i]).collect())
    }

    /// Gallery items proposed for every probe, nearest first, each with its distance in the
    /// index's [`SearchSpace`]: by means, ANN neighbours of each probe component among all
    /// gallery components, merged by distance, an item as near as its closest component; in a
    /// closed form's exact space, ANN neighbours of the probe's point. One entry per item, at most the
    /// manifest's `candidates`. With `skip_self`, probe i never proposes item i (leave one out).
    /// The distances let proposals of several shards merge into the same list.
    ///
    /// # Shapes
    /// `probes.mean`: `[P, C, D]`.
    pub fn propose(&self, probes: &Embedding, skip_self: bool) -> Result<Vec<Vec<(usize, f32)>>> {
        let space = self.manifest.search.space;
        let per_probe = space.points_per_item(probes.components() as usize);
        let per_item = space.points_per_item(self.manifest.components);
        let candidates = self.manifest.search.candidates;
        let want = candidates + usize::from(skip_self);
        let k = (want * per_item).min(self.ann.len());
        let found = self.ann.nearest(&space.probe_points(probes)?, k);
        Ok(found
            .chunks(per_probe)
            .enumerate()
            .map(|(i, per_component)| {
                let mut merged: Vec<(usize, f32)> = per_component.iter().flatten().copied().collect();
                merged.sort_by(|x, y| x.1.total_cmp(&y.1));
                let mut items: Vec<(usize, f32)> = Vec::with_capacity(candidates);
                for (id, distance) in merged {
                    let item = id / per_item;
                    if (skip_self && item == i) || items.iter().any(|&(j, _)| j == item) {
                        continue;
                    }
                    items.push((item, distance));
                    if items.len() == candidates {
                        break;
                    }
                }
                items
            })
            .collect())
    }

    /// [`Gallery::propose`] without the distances.
    fn proposal_items(&self, probes: &Embedding, skip_self: bool) -> Result<Vec<Vec<usize>>> {
        Ok(self.propose(probes, skip_self)?.into_iter().map(|p| p.into_iter().map(|(i, _)| i).collect()).collect())
    }

    /// Recall@10 of the proposals against exhaustive search in the index's space (the closest
    /// pair of component means, or the closed form's rank); skipped (None) above 10⁹ component distances.
    fn ann_recall(&self, probes: &Embedding, proposals: &[Vec<usize>]) -> Result<Option<f64>> {
        let (p, n, c) = (probes.batch(), self.embedding.batch(), self.manifest.components as i64);
        if (p * n * c * c) as f64 > 1e9 {
            return Ok(None);
        }
        let k = 10.min(n);
        let mut exact = Vec::with_capacity(p as usize);
        tch::no_grad(|| -> Result<()> {
            for start in (0..p).step_by(256) {
                let len = 256.min(p - start);
                let dist = self.exact_distances(&probes.narrow(start, len));
                let (_, idx) = dist.topk(k, 1, false, true);
                let idx: Vec<i64> = Vec::<i64>::try_from(idx.flatten(0, -1))?;
                exact.extend(idx.chunks(k as usize).map(|r| r.iter().map(|&i| i as usize).collect::<Vec<_>>()));
            }
            Ok(())
        })?;
        Ok(Some(recall_at(proposals, &exact, k as usize)))
    }

    /// For a closed-form model searched by the means: the share of each probe's exact top 10 by
    /// the closed form ([`ClosedForm::rank`] over the whole gallery) among its proposals,
    /// averaged; `None` for other models or above 10⁹ component pairs.
    fn candidate_recall(&self, probes: &Embedding, proposals: &[Vec<usize>]) -> Result<Option<f64>> {
        let (SearchSpace::Means, MatchEstimator::ClosedForm(form)) =
            (self.manifest.search.space, self.manifest.search.estimator)
        else {
            return Ok(None);
        };
        let (p, n, c) = (probes.batch(), self.embedding.batch(), self.manifest.components as i64);
        if (p * n * c * c) as f64 > 1e9 || p == 0 {
            return Ok(None);
        }
        let k = 10.min(n);
        let mut found = 0usize;
        tch::no_grad(|| -> Result<()> {
            for start in (0..p).step_by(256) {
                let len = 256.min(p - start);
                let (_, idx) = (form.rank)(&probes.narrow(start, len), &self.embedding).topk(k, 1, true, true);
                let idx: Vec<i64> = Vec::<i64>::try_from(idx.flatten(0, -1))?;
                for (row, exact) in idx.chunks(k as usize).enumerate() {
                    let proposed = &proposals[start as usize + row];
                    found += exact.iter().filter(|&&i| proposed.contains(&(i as usize))).count();
                }
            }
            Ok(())
        })?;
        Ok(Some(found as f64 / (p * k) as f64))
    }

    /// Every probe's distance to every gallery item in the index's space, in the graph's order
    /// (squared: the closest pair of component means, or minus the closed form's rank).
    ///
    /// # Shapes
    /// `probes.mean`: `[P, C, D]`; returns `[P, N]`.
    pub fn exact_distances(&self, probes: &Embedding) -> Tensor {
        match self.manifest.search.space {
            SearchSpace::Means => {
                let (p, n, d) = (probes.batch(), self.embedding.batch(), probes.dim());
                let (cp, cg) = (probes.components(), self.manifest.components as i64);
                let diff = probes.mean.view([p, 1, cp, 1, d]) - self.embedding.mean.view([1, n, 1, cg, d]);
                diff.square().sum_dim_intlist([4i64].as_slice(), false, Kind::Float).amin([2i64, 3].as_slice(), false)
            }
            SearchSpace::Exact(form) => -(form.rank)(probes, &self.embedding),
        }
    }
}

impl Rules {
    /// Embeds probe images with the model (η with the index's seeded samples).
    pub fn embed(&self, probes: &ImageSet) -> Result<EmbeddedSet> {
        check_shape(probes, self.manifest.input_shape, "probe")?;
        embed_images(&self.net, probes, self.device, &self.manifest.search)
    }

    /// p(m | probe, row) for every proposed row, in the proposals' order.
    fn score(&self, probes: &Embedding, candidates: &Candidates) -> Result<Vec<Vec<f64>>> {
        let proposals = candidates.proposals;
        let (rows, items): (Vec<usize>, Vec<usize>) =
            proposals.iter().enumerate().flat_map(|(i, p)| p.iter().map(move |&j| (i, j))).unzip();
        let mut probabilities = Vec::with_capacity(rows.len());
        let _generator = hedge_run::torch::seeded_generator(self.manifest.search.seed);
        tch::no_grad(|| -> Result<()> {
            for (r, g) in rows.chunks(20_000).zip(items.chunks(20_000)) {
                let left = probes.select_rows(&index_tensor(r));
                let right = candidates.embedding.select_rows(&index_tensor(g));
                let estimator = MatchEstimator::for_matching(self.matcher.matching, self.manifest.search.estimator);
                let p = estimator.probability(&self.matcher, &left, &right)?;
                probabilities.extend(Vec::<f64>::try_from(p.to_kind(Kind::Double))?);
            }
            Ok(())
        })?;
        let mut out = Vec::with_capacity(proposals.len());
        let mut at = 0;
        for p in proposals {
            out.push(probabilities[at..at + p.len()].to_vec());
            at += p.len();
        }
        Ok(out)
    }

    /// Identities best first (at least two, for the margin) for every probe, each with its best
    /// row's probability, and each probe's self-mismatch.
    fn answer(
        &self,
        set: &EmbeddedSet,
        candidates: &Candidates,
        top_k: usize,
    ) -> Result<(Vec<RankedIdentities>, Vec<f64>)> {
        let scores = self.score(&set.embedding, candidates)?;
        let ranked = candidates
            .proposals
            .iter()
            .zip(&scores)
            .map(|(rows, probs)| {
                let mut best: HashMap<u32, (f64, usize)> = HashMap::new();
                for (&row, &p) in rows.iter().zip(probs) {
                    let entry = best.entry(candidates.labels[row]).or_insert((f64::NEG_INFINITY, row));
                    if p > entry.0 {
                        *entry = (p, row);
                    }
                }
                let mut ranked: Vec<(u32, f64, usize)> = best.into_iter().map(|(l, (p, i))| (l, p, i)).collect();
                ranked.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
                ranked.truncate(top_k.max(2));
                ranked
            })
            .collect();
        let eta: Vec<f64> = Vec::<f64>::try_from(set.eta.to_kind(Kind::Double))?;
        Ok((ranked, eta))
    }

    /// The answer for every probe of `probes` (embedded as `set`): the exact re-rank of its
    /// proposed rows and the abstention rule, applied once.
    pub fn decide(&self, probes: &ImageSet, set: &EmbeddedSet, candidates: &Candidates) -> Result<Vec<ProbeResult>> {
        if candidates.proposals.len() != probes.len() || set.embedding.batch() as usize != probes.len() {
            return Err(IdentifyError::invalid(
                "candidates",
                candidates.proposals.len(),
                format!("give one proposal list per probe ({} probes)", probes.len()),
            ));
        }
        let rows = candidates.labels.len();
        if candidates.item_names.len() != rows || candidates.embedding.batch() as usize != rows {
            return Err(IdentifyError::invalid(
                "candidates",
                rows,
                "labels, item names and embedding rows must have the same length",
            ));
        }
        if let Some(&bad) = candidates.proposals.iter().flatten().find(|&&r| r >= rows) {
            return Err(IdentifyError::invalid("candidates", bad, format!("rows run 0..{rows}")));
        }
        let names = &self.manifest.class_names;
        if let Some(&bad) = candidates.labels.iter().find(|&&l| l as usize >= names.len()) {
            return Err(IdentifyError::invalid("candidates", bad, format!("labels run 0..{}", names.len())));
        }
        let top_k = self.manifest.search.top_k;
        let (ranked, eta) = self.answer(set, candidates, top_k)?;
        let calibration = &self.manifest.calibration;
        Ok(ranked
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let probabilities: Vec<f64> = r.iter().map(|m| m.1).collect();
                let abstained = calibration.rule.abstains(calibration.score.of(eta[i], &probabilities));
                let r = &r[..r.len().min(top_k)];
                ProbeResult {
                    probe: probes.names.get(i).cloned().unwrap_or_else(|| format!("#{i}")),
                    label: probes.class_names.get(probes.labels[i] as usize).cloned(),
                    eta: eta[i],
                    margin: 1.0 - UncertaintyScore::Margin.of(eta[i], &probabilities),
                    abstained,
                    prediction: if abstained { None } else { r.first().map(|m| names[m.0 as usize].clone()) },
                    matches: r
                        .iter()
                        .map(|&(l, p, row)| IdentityMatch {
                            identity: names[l as usize].clone(),
                            probability: p,
                            gallery_item: candidates.item_names[row].clone(),
                        })
                        .collect(),
                }
            })
            .collect())
    }

    /// Whether each image's top identity is its label (by name, from `images`, whose embedding
    /// `set` is), with its `score`: the validation curve.
    pub fn validate(
        &self,
        images: &ImageSet,
        set: &EmbeddedSet,
        candidates: &Candidates,
        score: UncertaintyScore,
    ) -> Result<(Vec<f64>, Vec<bool>)> {
        let (ranked, eta) = self.answer(set, candidates, 2)?;
        let uncertainty = ranked
            .iter()
            .enumerate()
            .map(|(i, r)| score.of(eta[i], &r.iter().map(|m| m.1).collect::<Vec<_>>()))
            .collect();
        let correct = ranked
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let truth = &images.class_names[images.labels[i] as usize];
                r.first().is_some_and(|m| &self.manifest.class_names[m.0 as usize] == truth)
            })
            .collect();
        Ok((uncertainty, correct))
    }
}

impl Identifier {
    /// Identifies every image of `probes` (labels, if any, are only reported and scored).
    pub fn identify(&self, probes: &ImageSet) -> Result<(Vec<ProbeResult>, SearchSummary)> {
        let start = Instant::now();
        let set = self.rules.embed(probes)?;
        let proposals = self.gallery.proposal_items(&set.embedding, false)?;
        let results = self.rules.decide(probes, &set, &self.gallery.view(&proposals))?;
        let seconds = start.elapsed().as_secs_f64();
        let recall = self.gallery.ann_recall(&set.embedding, &proposals)?;
        let mut summary = summarise(
            &results,
            &self.rules.manifest,
            recall.ok_or(RecallSkipped::TooLarge),
            probes.len() as f64 / seconds.max(1e-9),
        );
        summary.candidate_recall_at_10 = self.gallery.candidate_recall(&set.embedding, &proposals)?;
        Ok((results, summary))
    }
}

/// The numbers of a labelled probe set's results; `recall` is the ANN stage's recall@10, or
/// why it was not measured.
pub fn summarise(
    results: &[ProbeResult],
    manifest: &IndexManifest,
    recall: std::result::Result<f64, RecallSkipped>,
    rate: f64,
) -> SearchSummary {
    let n = results.len().max(1) as f64;
    let known = results.iter().filter(|r| r.label.as_ref().is_some_and(|l| manifest.class_names.contains(l))).count();
    let top1 = top1_correct;
    let in_top_k = |r: &ProbeResult| r.matches.iter().any(|m| Some(&m.identity) == r.label.as_ref());
    let answered: Vec<&ProbeResult> = results.iter().filter(|r| !r.abstained).collect();
    let mut summary = SearchSummary {
        probes: results.len(),
        known_identity: known,
        accuracy: results.iter().filter(|r| top1(r)).count() as f64 / n,
        top_k_accuracy: results.iter().filter(|r| in_top_k(r)).count() as f64 / n,
        top_k: manifest.search.top_k,
        rule: manifest.calibration.rule,
        target_risk: manifest.calibration.target_risk,
        coverage: answered.len() as f64 / n,
        accuracy_answered: (!answered.is_empty())
            .then(|| answered.iter().filter(|r| top1(r)).count() as f64 / answered.len() as f64),
        ann_recall_at_10: recall.ok(),
        candidate_recall_at_10: None,
        probes_per_second: rate,
        // A point model has no η (it is 0 for every probe): only the margin ranks its answers.
        selective: [UncertaintyScore::Eta, UncertaintyScore::Margin]
            .into_iter()
            .filter(|&s| s == UncertaintyScore::Margin || manifest.model != ModelKind::Point)
            .filter_map(|s| SelectiveQuality::of(results, s))
            .collect(),
        undefined: Vec::new(),
    };
    summary.undefined = explain_nulls(
        &summary,
        &[
            NullReason::new("accuracy_answered", "every probe abstained: no answer to score"),
            NullReason::new(
                "ann_recall_at_10",
                match recall {
                    Err(RecallSkipped::Sharded) => {
                        "the gallery is split across shards and no machine holds all of it for an exact search; \
                         `hedge bench search` measures the ANN stage's recall"
                    }
                    _ => {
                        "exact search over probes x gallery components would exceed 10^9 distances; \
                         `hedge bench search` measures the recall at that scale"
                    }
                },
            ),
        ],
    );
    summary
}

/// Embeds `gallery` with the run's model, builds the graph over its means, chooses the
/// abstention rule on the validation probes and writes the index folder `out` (refused when it
/// exists, unless `overwrite`: then it is replaced only once the new one is complete).
pub fn build_index(
    run_path: &Path,
    gallery: &ImageSet,
    request: &IndexRequest,
    out: &Path,
    overwrite: bool,
    device: Device,
) -> Result<IndexManifest> {
    check_index_out(out, overwrite)?;
    let mut manifest =
        IndexManifest::for_run(run_path, request.ann, request.search, request.score, request.target_risk)?;
    let run = RunDir::open(run_path)?;
    let config = run.read_config()?.hib;
    check_shape(gallery, manifest.input_shape, "gallery")?;
    if let Some(v) = &request.validation {
        check_shape(v, manifest.input_shape, "validation")?;
    }
    let (vars, net) = load_model(&run, &config, device)?;
    let start = Instant::now();
    let set = embed_images(&net, gallery, device, &request.search)?;
    manifest.embed_seconds = start.elapsed().as_secs_f64();
    manifest.gallery_source = gallery.source.clone();
    manifest.class_names = gallery.class_names.clone();
    manifest.item_names = gallery.names.clone();
    let rules = Rules { manifest: manifest.clone(), matcher: net.matcher.to_cpu(), net, _vars: vars, device };
    let mut gallery_part = Gallery::from_embedding(
        manifest,
        Embedding {
            mean: set.embedding.mean.shallow_clone(),
            variance: set.embedding.variance.as_ref().map(Tensor::shallow_clone),
        },
        set.labels.clone(),
    )?;
    if let Some(v) = &request.validation {
        let unknown = v.labels.iter().filter(|&&l| !gallery.class_names.contains(&v.class_names[l as usize])).count();
        if unknown > 0 {
            tracing::warn!(
                "{unknown} of {} validation probes in {} have identities the gallery lacks (folder names must match \
                 the gallery's); they count as identification errors",
                v.len(),
                v.source.display()
            );
        }
    }
    let (source, (uncertainty, correct)) = match &request.validation {
        Some(v) => {
            let probes = rules.embed(v)?;
            let proposals = gallery_part.proposal_items(&probes.embedding, false)?;
            let curve = rules.validate(v, &probes, &gallery_part.view(&proposals), request.score)?;
            (format!("labelled probes {}", v.source.display()), curve)
        }
        // The gallery is already embedded: every image a probe against the others.
        None => {
            let proposals = gallery_part.proposal_items(&set.embedding, true)?;
            let curve = rules.validate(gallery, &set, &gallery_part.view(&proposals), request.score)?;
            ("leave-one-out over the gallery".to_string(), curve)
        }
    };
    gallery_part.manifest.calibration =
        Calibration::choose(source, request.score, &uncertainty, &correct, request.target_risk)?;
    write_index(&gallery_part, &set.eta, out, overwrite)?;
    Ok(gallery_part.manifest)
}

/// The kind of folder an index is (its ownership marker).
pub const INDEX_KIND: &str = "hib index";

/// The files of an index folder (besides hedge's folder marker).
const INDEX_FOLDER_FILES: [&str; 4] = [INDEX_FILE, GALLERY_FILE, ANN_FILE, VALIDATION_CSV];

/// An index replaces its folder whole, so `--overwrite` is accepted only for a folder hedge made
/// that holds nothing but an index's files: a user's folder (a gallery, say) is never emptied.
fn check_index_out(out: &Path, overwrite: bool) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !overwrite {
        return Err(IdentifyError::input(
            out,
            "already exists; choose another --out, or pass --overwrite to replace it",
        ));
    }
    hedge_run::atomic::check_output_dir(out, INDEX_KIND, true)?;
    let foreign = hedge_run::atomic::entries_besides_marker(out)
        .into_iter()
        .find(|name| !INDEX_FOLDER_FILES.contains(&name.as_str()));
    if let Some(name) = foreign {
        return Err(IdentifyError::input(
            out,
            format!(
                "holds '{name}', which is not part of a hedge index; --overwrite replaces an index folder whole, \
                 so move it out first or choose another --out"
            ),
        ));
    }
    Ok(())
}

/// Writes `gallery` (with each item's η) as the index folder `out`, through a temporary sibling.
pub(crate) fn write_index(gallery: &Gallery, eta: &Tensor, out: &Path, overwrite: bool) -> Result<()> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(IdentifyError::input(out, "its parent folder does not exist; create it first"));
    }
    let tmp = hedge_run::atomic::temp_sibling(out);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| IdentifyError::io(&tmp, e))?;
    let result = (|| -> Result<()> {
        hedge_run::atomic::mark_as_hedges(&tmp, INDEX_KIND)?;
        let e = &gallery.embedding;
        let variance = e.variance.as_ref().map_or_else(|| e.mean.zeros_like(), Tensor::shallow_clone);
        let labels = Tensor::from_slice(&gallery.labels.iter().map(|&l| i64::from(l)).collect::<Vec<_>>());
        Tensor::write_safetensors(
            &[("mean", &e.mean), ("variance", &variance), ("eta", eta), ("label", &labels)],
            tmp.join(GALLERY_FILE),
        )?;
        gallery.ann.save(&tmp.join(ANN_FILE))?;
        hedge_run::write_atomic(&tmp.join(VALIDATION_CSV), gallery.manifest.calibration.csv().as_bytes())?;
        let mut manifest = gallery.manifest.clone();
        manifest.files = SealedFiles::of(&tmp, [GALLERY_FILE, ANN_FILE, VALIDATION_CSV])?;
        hedge_run::write_atomic(&tmp.join(INDEX_FILE), manifest.sealed_json().as_bytes())?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if out.exists() && overwrite {
        // Checked again: the folder may have changed while the index was built.
        if let Err(e) = check_index_out(out, true) {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    }
    swap_into_place(&tmp, out, overwrite)
}

/// Replaces the abstention rule of the index folder `dir` (checked first) with `calibration`:
/// its validation curve file and `index.json`, each written to a temporary file and renamed.
/// For folders being assembled (a shard set's shards, whose rule is chosen once all of them
/// exist), not for an index a search may be reading.
pub(crate) fn rewrite_calibration(dir: &Path, calibration: &Calibration) -> Result<IndexManifest> {
    let mut manifest = IndexFiles::open(dir)?.manifest;
    manifest.calibration = calibration.clone();
    hedge_run::write_atomic(&dir.join(VALIDATION_CSV), calibration.csv().as_bytes())?;
    manifest.files.reseal(dir, VALIDATION_CSV)?;
    hedge_run::write_atomic(&dir.join(INDEX_FILE), manifest.sealed_json().as_bytes())?;
    Ok(manifest)
}

/// Renames the finished folder `tmp` to `out`; with `replace`, an `out` already there (checked
/// replaceable by the caller) is moved aside first and deleted only once the new folder is in
/// place (without it, a folder that appeared meanwhile makes the rename fail).
pub(crate) fn swap_into_place(tmp: &Path, out: &Path, replace: bool) -> Result<()> {
    if replace && out.exists() {
        let old = out.with_file_name(format!(
            ".old-{}-{}",
            std::process::id(),
            out.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::rename(out, &old).map_err(|e| IdentifyError::io(out, e))?;
        std::fs::rename(tmp, out).map_err(|e| IdentifyError::io(out, e))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(tmp, out).map_err(|e| IdentifyError::io(out, e))?;
    }
    Ok(())
}

/// An index folder, checked against its manifest, ready to load.
pub struct IndexFiles {
    dir: PathBuf,
    manifest: IndexManifest,
}

impl IndexFiles {
    /// Reads `index.json` and checks every listed file's SHA-256 (so a damaged or swapped graph
    /// is refused before the graph reader sees it).
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join(INDEX_FILE);
        if !path.is_file() {
            return Err(IdentifyError::input(
                dir,
                format!("has no {INDEX_FILE}; build an index with `hedge hib index`"),
            ));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| IdentifyError::io(&path, e))?;
        let manifest = IndexManifest::parse(&text, &path)?;
        if let Some(entry) = manifest.files.first_broken(dir)? {
            return Err(IdentifyError::input(
                dir.join(&entry.name),
                format!("is missing or differs from the SHA-256 in {INDEX_FILE}; the index was damaged: rebuild it"),
            ));
        }
        Ok(IndexFiles { dir: dir.to_path_buf(), manifest })
    }

    pub fn manifest(&self) -> &IndexManifest {
        &self.manifest
    }

    /// Loads the graph, the gallery and the model. `run` replaces the run recorded in the index
    /// (e.g. after moving it); its weights must be the ones the gallery was embedded with.
    pub fn load(&self, run: Option<&Path>, device: Device) -> Result<Identifier> {
        Ok(Identifier { rules: self.load_rules(run, device)?, gallery: self.load_gallery()? })
    }

    /// The index's rules and the model that embeds probes (see [`IndexFiles::load`] for `run`).
    pub fn load_rules(&self, run: Option<&Path>, device: Device) -> Result<Rules> {
        let run_path = run.map_or_else(|| self.manifest.run.clone(), Path::to_path_buf);
        let run = RunDir::open(&run_path)?;
        let config = run.read_config()?.hib;
        let weights = weights_path(&run, &config);
        if sha256_file(&weights)? != self.manifest.weights_sha256 {
            return Err(IdentifyError::input(
                &weights,
                "are not the weights the gallery was embedded with (SHA-256 differs); rebuild the index with this run",
            ));
        }
        let mut manifest = self.manifest.clone();
        if (config.model.dim, config.model.embedding.kind(), config.model.embedding.components())
            != (manifest.dim, manifest.model, manifest.components)
        {
            return Err(IdentifyError::input(
                self.dir.join(INDEX_FILE),
                format!(
                    "describes a {:?} model of dim {} x {} components, but the run's config.json has {:?}, dim {} x \
                     {}; rebuild the index",
                    manifest.model,
                    manifest.dim,
                    manifest.components,
                    config.model.embedding.kind(),
                    config.model.dim,
                    config.model.embedding.components()
                ),
            ));
        }
        let (vars, net) = load_model(&run, &config, device)?;
        manifest.run = run_path;
        Ok(Rules { manifest, matcher: net.matcher.to_cpu(), net, _vars: vars, device })
    }

    /// The graph and the embedded gallery, without the model (a shard's machine needs no run).
    pub fn load_gallery(&self) -> Result<Gallery> {
        let gallery_path = self.dir.join(GALLERY_FILE);
        let stored: HashMap<String, Tensor> = Tensor::read_safetensors(&gallery_path)?.into_iter().collect();
        let get = |name: &str| {
            stored.get(name).map(Tensor::shallow_clone).ok_or_else(|| {
                IdentifyError::input(&gallery_path, format!("has no tensor '{name}'; rebuild the index"))
            })
        };
        let mean = get("mean")?;
        // Point galleries store zeros as their variance; the scorer must see none.
        let variance = if self.manifest.model == ModelKind::Point { None } else { Some(get("variance")?) };
        let labels: Vec<u32> = Vec::<i64>::try_from(get("label")?)?.into_iter().map(|l| l as u32).collect();
        let manifest = self.manifest.clone();
        // The description and the gallery must agree before a search indexes one by another
        // (a mismatch here would otherwise be an index out of bounds mid-search).
        let index_json = self.dir.join(INDEX_FILE);
        let disagree = |what: String| Err(IdentifyError::input(&index_json, format!("{what}; rebuild the index")));
        let mean_size = mean.size();
        if mean_size.len() != 3
            || mean_size[0] != labels.len() as i64
            || mean_size[1] != manifest.components as i64
            || mean_size[2] != manifest.dim as i64
        {
            return disagree(format!(
                "describes dim {} x {} components but {GALLERY_FILE} holds means of shape {mean_size:?} for {} labels",
                manifest.dim,
                manifest.components,
                labels.len()
            ));
        }
        if variance.as_ref().is_some_and(|v| v.size() != mean_size) {
            return disagree(format!("{GALLERY_FILE} holds variances of another shape than its means {mean_size:?}"));
        }
        if manifest.item_names.len() != labels.len() {
            return disagree(format!(
                "names {} gallery items but {GALLERY_FILE} holds {}",
                manifest.item_names.len(),
                labels.len()
            ));
        }
        if let Some(&label) = labels.iter().find(|&&l| l as usize >= manifest.class_names.len()) {
            return disagree(format!(
                "names {} identities but the gallery has label {label}",
                manifest.class_names.len()
            ));
        }
        let mut ann = Hnsw::load(&self.dir.join(ANN_FILE))?;
        let space = manifest.search.space;
        if ann.dim() != space.point_dim(manifest.dim) {
            return disagree(format!(
                "describes dim {} searched by {} (points of dim {}) but {ANN_FILE} holds points of dim {}",
                manifest.dim,
                space.name(),
                space.point_dim(manifest.dim),
                ann.dim()
            ));
        }
        ann.set_ef_search(manifest.ann.ef_search)?;
        let per_item = space.points_per_item(manifest.components);
        if ann.len() != labels.len() * per_item {
            return Err(IdentifyError::input(
                &self.dir,
                format!(
                    "its graph holds {} points but the gallery {} items x {per_item} points each (searched by {}); \
                     rebuild the index",
                    ann.len(),
                    labels.len(),
                    space.name()
                ),
            ));
        }
        Ok(Gallery { manifest, ann, embedding: Embedding { mean, variance }, labels })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// One row of `hedge bench search`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchBenchRow {
    pub dim: usize,
    pub points: usize,
    pub queries: usize,
    pub ann: AnnConfig,
    pub build_seconds: f64,
    pub inserts_per_second: f64,
    pub queries_per_second: f64,
    pub recall_at_10: f64,
    /// Growth of the process's resident memory while building (Linux; `None` elsewhere).
    pub build_rss_bytes: Option<u64>,
    /// What the graph holds once built: points, levels and link lists
    /// ([`Hnsw::memory_bytes`]).
    #[serde(default)]
    pub memory_bytes: u64,
    /// Size of the graph file when written.
    pub dump_bytes: u64,
    pub exact_seconds: f64,
}

/// Build and query throughput, recall@10 against exact search and memory of the ANN stage on
/// `points` synthetic embedding means of dimension `dim`: identities' centres drawn from N(0, I)
/// and ten images of each around it (sd 0.1), the shape of a trained embedding; queries are
/// fresh images of random identities.
pub fn search_bench(dim: usize, points: usize, queries: usize, ann: &AnnConfig, seed: u64) -> Result<SearchBenchRow> {
    use rand::SeedableRng;
    ann.check()?;
    if points < 10 || queries == 0 {
        return Err(IdentifyError::invalid("points", points, "need at least 10 points and 1 query"));
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (gallery, probe) = synthetic_means(dim, points, queries, &mut rng);
    let rss_before = resident_bytes();
    let start = Instant::now();
    let index = Hnsw::build(&gallery, dim, ann)?;
    let build_seconds = start.elapsed().as_secs_f64();
    let build_rss_bytes = resident_bytes().zip(rss_before).map(|(a, b)| a.saturating_sub(b));
    let start = Instant::now();
    let found = index.nearest(&probe, 10);
    let query_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let exact = exact_nearest(&gallery, dim, &probe, 10)?;
    let exact_seconds = start.elapsed().as_secs_f64();
    let approx: Vec<Vec<usize>> = found.iter().map(|r| r.iter().map(|&(i, _)| i).collect()).collect();
    let dir = tempfile_dir()?;
    index.save(&dir.join(ANN_FILE))?;
    let dump_bytes = std::fs::metadata(dir.join(ANN_FILE)).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    let memory_bytes = index.memory_bytes() as u64;
    Ok(SearchBenchRow {
        dim,
        points,
        queries,
        ann: *ann,
        build_seconds,
        inserts_per_second: points as f64 / build_seconds.max(1e-9),
        queries_per_second: queries as f64 / query_seconds.max(1e-9),
        recall_at_10: recall_at(&approx, &exact, 10),
        build_rss_bytes,
        memory_bytes,
        dump_bytes,
        exact_seconds,
    })
}

/// Synthetic embedding means, the shape of a trained embedding: identities' centres drawn from
/// N(0, I) (one per ten gallery points), ten gallery points around each (sd 0.1), and queries
/// that are fresh points of random identities: `([points * dim], [queries * dim])`.
fn synthetic_means(
    dim: usize,
    points: usize,
    queries: usize,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> (Vec<f32>, Vec<f32>) {
    use rand_distr::{Distribution, StandardNormal};
    let identities = (points / 10).max(1);
    let centres: Vec<f32> = (0..identities * dim).map(|_| StandardNormal.sample(rng)).collect();
    let mut draw = |n: usize, gallery: bool| -> Vec<f32> {
        let mut out = Vec::with_capacity(n * dim);
        for i in 0..n {
            let who = if gallery { i % identities } else { rand::Rng::random_range(&mut *rng, 0..identities) };
            for d in 0..dim {
                let noise: f32 = StandardNormal.sample(&mut *rng);
                out.push(centres[who * dim + d] + 0.1 * noise);
            }
        }
        out
    };
    let gallery = draw(points, true);
    let probe = draw(queries, false);
    (gallery, probe)
}

/// One row of `hedge bench exact-search`: one way of finding each query's ten gallery items of
/// highest match probability under a closed form with an exact search space
/// ([`SearchSpace::Exact`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExactSearchBenchRow {
    pub dim: usize,
    pub points: usize,
    pub queries: usize,
    pub ann: AnnConfig,
    /// `means`: the graph over the means proposes `candidates` items per query and the closed
    /// form re-ranks them (how a means index finds such a model's candidates); the closed form's
    /// own space: the graph over its points finds the ten directly.
    pub space: SearchSpace,
    /// Items the graph proposes per query (10 in the exact space).
    pub candidates: usize,
    pub build_seconds: f64,
    pub inserts_per_second: f64,
    /// Ten-neighbour queries a second, the re-rank included (the best of three passes).
    pub queries_per_second: f64,
    /// Recall@10 against the closed form's exact top 10 (brute force over every item).
    pub recall_at_10: f64,
    /// What the graph holds once built ([`Hnsw::memory_bytes`]).
    pub memory_bytes: u64,
}

/// Per-dimension variance of the synthetic embeddings of [`exact_search_bench`]: 0.01 ·
/// exp(U(−2, 2)), around the square of the spread of an identity's images (sd 0.1), so that an
/// item's uncertainty is on the scale of the distances that separate its neighbours.
fn synthetic_variances(n: usize, dim: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<f32> {
    (0..n * dim).map(|_| 0.01 * rand::Rng::random_range(&mut *rng, -2.0f32..2.0).exp()).collect()
}

/// Search in a closed form's exact space beside means-first search, on `points` synthetic
/// Gaussian embeddings of dimension `dim` ([`search_bench`]'s means, each with a diagonal
/// variance of 0.01 · exp(U(−2, 2)) per dimension) and `queries` fresh point queries: for each
/// space its build time, query rate and recall@10 against the closed form's exact top 10
/// ([`ClosedForm::rank`] by brute force). Means-first search asks the graph over the means for
/// `candidates` items and re-ranks them by the closed form's match probability (a unit head:
/// a = 1, b = 0), as an index does; the exact space asks the graph over the closed form's
/// points for ten.
pub fn exact_search_bench(
    form: &'static ClosedForm,
    dim: usize,
    points: usize,
    queries: usize,
    candidates: usize,
    ann: &AnnConfig,
    seed: u64,
) -> Result<[ExactSearchBenchRow; 2]> {
    use rand::SeedableRng;
    ann.check()?;
    let space = SearchSpace::for_matching(Matching::ClosedForm(form));
    if space == SearchSpace::Means {
        return Err(IdentifyError::invalid("loss", form.name, "its closed form has no exact search space"));
    }
    if points < 10 || queries == 0 || dim == 0 {
        return Err(IdentifyError::invalid("points", points, "need at least 10 points, 1 query and 1 dimension"));
    }
    if !(10..=points).contains(&candidates) {
        return Err(IdentifyError::invalid("candidates", candidates, format!("must lie in 10..={points}")));
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (gallery_means, probe_means) = synthetic_means(dim, points, queries, &mut rng);
    let variances = synthetic_variances(points, dim, &mut rng);
    let shape = |n: usize| [n as i64, 1, dim as i64];
    let gallery = Embedding {
        mean: Tensor::from_slice(&gallery_means).reshape(shape(points)),
        variance: Some(Tensor::from_slice(&variances).reshape(shape(points))),
    };
    let probes = Embedding::point(Tensor::from_slice(&probe_means).reshape([queries as i64, dim as i64]));
    let exact: Vec<Vec<usize>> = tch::no_grad(|| -> Result<_> {
        let (_, idx) = (form.rank)(&probes, &gallery).topk(10, 1, true, true);
        let idx: Vec<i64> = Vec::<i64>::try_from(idx.flatten(0, -1))?;
        Ok(idx.chunks(10).map(|r| r.iter().map(|&i| i as usize).collect()).collect())
    })?;
    let row = |space, candidates, build_seconds: f64, query_seconds: f64, found: &[Vec<usize>], index: &Hnsw| {
        ExactSearchBenchRow {
            dim,
            points,
            queries,
            ann: *ann,
            space,
            candidates,
            build_seconds,
            inserts_per_second: points as f64 / build_seconds.max(1e-9),
            queries_per_second: queries as f64 / query_seconds.max(1e-9),
            recall_at_10: recall_at(found, &exact, 10),
            memory_bytes: index.memory_bytes() as u64,
        }
    };

    let head = MatchHead {
        a_raw: Tensor::from(1f32.exp_m1().ln()),
        b: Tensor::from(0f32),
        matching: Matching::ClosedForm(form),
    };
    let start = Instant::now();
    let by_means = Hnsw::build(&gallery_means, dim, ann)?;
    let means_build = start.elapsed().as_secs_f64();
    let (means_query, reranked) = best_of_three(|| -> Result<Vec<Vec<usize>>> {
        let proposed = by_means.nearest_with_ef(&probe_means, candidates, ann.ef_search.max(candidates));
        let (rows, items): (Vec<usize>, Vec<usize>) =
            proposed.iter().enumerate().flat_map(|(q, found)| found.iter().map(move |&(i, _)| (q, i))).unzip();
        let p = tch::no_grad(|| {
            (form.probability)(
                &head,
                &probes.select_rows(&index_tensor(&rows)),
                &gallery.select_rows(&index_tensor(&items)),
            )
        });
        let p: Vec<f64> = Vec::<f64>::try_from(p.to_kind(Kind::Double))?;
        let mut at = 0;
        Ok(proposed
            .iter()
            .map(|found| {
                let mut scored: Vec<(f64, usize)> =
                    found.iter().zip(&p[at..at + found.len()]).map(|(&(i, _), &p)| (p, i)).collect();
                at += found.len();
                scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                scored.into_iter().take(10).map(|(_, i)| i).collect()
            })
            .collect())
    });
    let means_row = row(SearchSpace::Means, candidates, means_build, means_query, &reranked?, &by_means);
    drop(by_means);

    let (gallery_points, probe_points) = (space.gallery_points(&gallery)?, space.probe_points(&probes)?);
    let start = Instant::now();
    let by_form = Hnsw::build(&gallery_points, space.point_dim(dim), ann)?;
    let exact_build = start.elapsed().as_secs_f64();
    let (exact_query, found) = best_of_three(|| {
        by_form
            .nearest(&probe_points, 10)
            .into_iter()
            .map(|r| r.into_iter().map(|(i, _)| i).collect::<Vec<usize>>())
            .collect::<Vec<_>>()
    });
    let exact_row = row(space, 10, exact_build, exact_query, &found, &by_form);
    Ok([means_row, exact_row])
}

/// The shortest of three timings of `run` (a shared machine only ever slows a pass down; one
/// pass over a thousand queries lasts a few hundredths of a second), with its answer.
fn best_of_three<T>(mut run: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut answer = None;
    for _ in 0..3 {
        let start = Instant::now();
        let out = run();
        best = best.min(start.elapsed().as_secs_f64());
        answer = Some(out);
    }
    (best, answer.expect("three passes ran"))
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("hedge-bench-search-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| IdentifyError::io(&dir, e))?;
    Ok(dir)
}

/// The process's resident set size (Linux `/proc/self/statm`).
fn resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_is_the_largest_coverage_within_the_target_risk() {
        // η ascending: ✓ ✓ ✓ ✗ ✗ → risks 0, 0, 0, 1/4, 2/5.
        let eta = [0.5, 0.1, 0.3, 0.2, 0.4];
        let correct = [false, true, true, true, false];
        let c = Calibration::choose("t".into(), UncertaintyScore::Eta, &eta, &correct, 0.25).unwrap();
        assert_eq!(c.uncertainty, vec![0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(c.rule, Abstention::AbstainAbove { threshold: 0.4 });
        assert_eq!((c.coverage, c.risk), (0.8, 0.25));
        let mut c = c;
        c.rechoose(0.5).unwrap();
        assert_eq!((c.rule, c.coverage, c.risk), (Abstention::AcceptAll, 1.0, 0.4));
        c.rechoose(0.2).unwrap();
        assert_eq!((c.rule, c.coverage), (Abstention::AbstainAbove { threshold: 0.3 }, 0.6));
        // The first probe is wrong: no coverage reaches zero risk.
        let c = Calibration::choose("t".into(), UncertaintyScore::Eta, &[0.1, 0.2], &[false, true], 0.0).unwrap();
        assert_eq!((c.rule, c.coverage), (Abstention::AbstainAll, 0.0));
        assert!(c.rule.abstains(0.0));
        assert!(Calibration::choose("t".into(), UncertaintyScore::Eta, &[0.1], &[true], 1.5).is_err());
    }

    #[test]
    fn the_margin_is_the_gap_between_the_best_two_identities() {
        assert!((UncertaintyScore::Margin.of(0.9, &[0.8, 0.3, 0.1]) - 0.5).abs() < 1e-12);
        // One identity among the candidates: the gap to nothing.
        assert!((UncertaintyScore::Margin.of(0.9, &[0.7]) - 0.3).abs() < 1e-12);
        assert_eq!(UncertaintyScore::Eta.of(0.9, &[0.8, 0.3]), 0.9);
    }

    /// A gallery of `n` two-component mixtures in 3 dimensions whose summed variances span two
    /// orders of magnitude (so an exact space's order is not the order of the means), searched in `space`
    /// with a graph search that keeps more candidates than there are points (exhaustive, hence
    /// exact: the build leaves no point unreachable).
    fn mixture_gallery(n: usize, space: SearchSpace, seed: i64) -> (Gallery, Embedding) {
        let _generator = hedge_run::torch::seeded_generator(seed);
        let (c, d) = (2, 3);
        let spread = |rows: i64| (Tensor::rand([rows, c, d], (Kind::Float, Device::Cpu)) * 5.0 - 4.0).exp();
        let gallery = Embedding {
            mean: Tensor::randn([n as i64, c, d], (Kind::Float, Device::Cpu)),
            variance: Some(spread(n as i64)),
        };
        let probes =
            Embedding { mean: Tensor::randn([40, c, d], (Kind::Float, Device::Cpu)), variance: Some(spread(40)) };
        let manifest = IndexManifest {
            format: INDEX_FORMAT,
            run: PathBuf::from("run"),
            weights_sha256: String::new(),
            model: ModelKind::Mog,
            dim: d as usize,
            components: c as usize,
            input_shape: [1, 28, 28],
            gallery_source: PathBuf::from("gallery"),
            class_names: (0..7).map(|i| format!("id{i}")).collect(),
            item_names: (0..n).map(|i| format!("item{i}")).collect(),
            ann: AnnConfig::default().with_ef_search(4 * n),
            search: SearchOptions::for_dim(d as usize).with_candidates(10).with_space(space),
            calibration: Calibration::choose(String::new(), UncertaintyScore::Eta, &[0.0], &[true], 0.1).unwrap(),
            embed_seconds: 0.0,
            build_seconds: 0.0,
            files: SealedFiles::default(),
            sha256: String::new(),
        };
        let labels = (0..n as u32).map(|i| i % 7).collect();
        (Gallery::from_embedding(manifest, gallery, labels).unwrap(), probes)
    }

    /// Each probe's `k` items of highest rank under `form`, by brute force over the whole gallery.
    fn brute_force(form: &ClosedForm, gallery: &Gallery, probes: &Embedding, k: i64) -> Vec<Vec<usize>> {
        let rank = (form.rank)(probes, &gallery.embedding);
        let (_, idx) = rank.topk(k, 1, true, true);
        Vec::<i64>::try_from(idx.flatten(0, -1))
            .unwrap()
            .chunks(k as usize)
            .map(|r| r.iter().map(|&i| i as usize).collect())
            .collect()
    }

    /// Every registered closed form with an exact search space: the graph over its points finds
    /// exactly the brute-force top 10, nearest first, after a write and a read, and two shards
    /// merged by distance answer as the whole gallery.
    #[test]
    fn search_in_an_exact_space_returns_exactly_the_brute_force_top_k() {
        let forms: Vec<&ClosedForm> = exact_forms().collect();
        assert!(!forms.is_empty(), "a registered loss has an exact search space");
        for form in forms {
            let space = SearchSpace::Exact(form);
            let (gallery, probes) = mixture_gallery(300, space, 3);
            assert_eq!((gallery.ann.dim(), gallery.ann.len()), (space.point_dim(3), 300), "one point per item");
            let found = gallery.propose(&probes, false).unwrap();
            let truth = brute_force(form, &gallery, &probes, 10);
            let items: Vec<Vec<usize>> = found.iter().map(|p| p.iter().map(|&(i, _)| i).collect()).collect();
            assert_eq!(items, truth, "{}", form.name);
            assert!(found.iter().all(|row| row.windows(2).all(|w| w[0].1 <= w[1].1)), "nearest first");
            // The graph written and read back answers the same.
            let dir = tempfile::tempdir().unwrap();
            write_index(&gallery, &Tensor::zeros([300], (Kind::Float, Device::Cpu)), &dir.path().join("i"), false)
                .unwrap();
            let loaded = IndexFiles::open(&dir.path().join("i")).unwrap().load_gallery().unwrap();
            assert_eq!(loaded.manifest.search.space, space);
            assert_eq!(loaded.propose(&probes, false).unwrap(), found);
            // Two shards, each searched alone and merged by distance, answer as the whole gallery.
            let halves = [(0..150).collect::<Vec<_>>(), (150..300).collect()];
            for (p, whole) in items.iter().enumerate() {
                let mut merged: Vec<(f32, usize)> = Vec::new();
                for half in &halves {
                    let shard = gallery.subset(half).unwrap();
                    let found = shard.propose(&probes.narrow(p as i64, 1), false).unwrap();
                    merged.extend(found[0].iter().map(|&(i, dist)| (dist, half[i])));
                }
                merged.sort_by(|x, y| x.0.total_cmp(&y.0));
                assert_eq!(&merged.iter().take(10).map(|m| m.1).collect::<Vec<_>>(), whole, "probe {p}");
            }
        }
    }

    #[test]
    fn search_by_means_ignores_the_variances_that_an_exact_space_counts() {
        let (by_means, probes) = mixture_gallery(300, SearchSpace::Means, 3);
        assert_eq!((by_means.ann.dim(), by_means.ann.len()), (3, 600), "one point per component");
        let found: Vec<Vec<usize>> = by_means.proposal_items(&probes, false).unwrap();
        // The exact nearest items by closest component means, the reference of `ann_recall`.
        let dist = by_means.exact_distances(&probes);
        let (_, idx) = dist.topk(10, 1, false, true);
        let nearest: Vec<usize> =
            Vec::<i64>::try_from(idx.flatten(0, -1)).unwrap().iter().map(|&i| i as usize).collect();
        assert_eq!(found.concat(), nearest);
        for form in exact_forms() {
            let truth = brute_force(form, &by_means, &probes, 10);
            let differ = found.iter().zip(&truth).filter(|(a, b)| a != b).count();
            assert!(differ > 20, "the variances change most probes' {} top 10 ({differ} of 40 differ)", form.name);
        }
    }

    #[test]
    fn a_search_space_reads_and_writes_as_its_name() {
        assert_eq!(serde_json::to_string(&SearchSpace::Means).unwrap(), "\"means\"");
        for form in exact_forms() {
            let space: SearchSpace = serde_json::from_str(&format!("\"{}\"", form.name)).unwrap();
            assert_eq!(space, SearchSpace::Exact(form));
        }
        let err = serde_json::from_str::<SearchSpace>("\"cosine\"").unwrap_err().to_string();
        assert!(err.contains("candidates are found by \"means\""), "{err}");
    }

    #[test]
    fn a_threshold_never_splits_equal_eta() {
        // Equal η for a right and a wrong probe: coverage 1/3 is not a cut point.
        let c = Calibration::choose("t".into(), UncertaintyScore::Eta, &[0.2, 0.2, 0.9], &[true, false, true], 0.0)
            .unwrap();
        assert_eq!(c.rule, Abstention::AbstainAll);
        let c = Calibration::choose("t".into(), UncertaintyScore::Eta, &[0.2, 0.2, 0.9], &[true, false, true], 0.5)
            .unwrap();
        assert_eq!((c.rule, c.coverage), (Abstention::AcceptAll, 1.0));
        assert_eq!(c.csv().lines().nth(2).unwrap(), "0.2,0,0.6666666666666666,0.5");
    }
}
