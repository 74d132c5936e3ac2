//! Match probability, pair losses and the VIB objective (Sections 2.1–2.4).

use tch::{nn, Kind, Tensor};

use crate::distribution::Embedding;

/// Added under the square root of distances: `‖0‖` has an infinite derivative, and a point
/// embedding compared with itself sits exactly there. 1e-12 moves distances by at most 1e-6.
const DISTANCE_EPS: f64 = 1e-12;

/// Which function of two embeddings a head's match probability is: HIB's expectation
/// E σ(−a‖z1 − z2‖ + b) (Eq. 5, estimated by Monte Carlo or quadrature), or a loss's own closed
/// form. A pair loss's registration names it ([`crate::pair_loss::Registration::matching`]), so a
/// model scores, ranks and abstains by the function it was trained with.
#[derive(Debug, Clone, Copy, Default)]
pub enum Matching {
    /// HIB's match probability (Eq. 5) and self-mismatch (Eq. 9).
    #[default]
    Hib,
    /// A closed form of the loss that trained the model.
    ClosedForm(&'static ClosedForm),
}

impl Matching {
    /// The closed form, if the match probability is one.
    pub fn closed_form(self) -> Option<&'static ClosedForm> {
        match self {
            Matching::Hib => None,
            Matching::ClosedForm(form) => Some(form),
        }
    }
}

impl PartialEq for Matching {
    fn eq(&self, other: &Self) -> bool {
        self.closed_form().map(|f| f.name) == other.closed_form().map(|f| f.name)
    }
}

/// A match probability in closed form p = σ(ℓ(x₁, x₂)), with what evaluation, search and
/// abstention need of it. Every function is exact: no sampling.
#[derive(Debug)]
pub struct ClosedForm {
    /// The name evaluation reports and index manifests give it (`"kind"` of a match estimator).
    pub name: &'static str,
    /// What it is, in one line.
    pub about: &'static str,
    /// Whether it needs both sides' variances (a point embedding has none); callers that take
    /// embeddings from a user check this before calling.
    pub distributions_only: bool,
    /// p(m | x₁, x₂) of aligned rows: `B` inputs each → `[B]`.
    pub probability: fn(&MatchHead, &Embedding, &Embedding) -> Tensor,
    /// η(x) = 1 − p(m | x, x): `B` inputs → `[B]`.
    pub self_mismatch: fn(&MatchHead, &Embedding) -> Tensor,
    /// A score of every probe against every gallery item (`P` and `G` inputs → `[P, G]`) that
    /// orders a probe's items as the match probability does for any head (a > 0): the exact
    /// ranking of identification.
    pub rank: fn(&Embedding, &Embedding) -> Tensor,
    /// Where an index looks for a probe's candidates.
    pub search: Search,
}

/// Where an approximate-nearest-neighbour index looks for a closed form's candidates.
#[derive(Debug, Clone, Copy)]
pub enum Search {
    /// By the component means, as for HIB; the closed form then re-ranks the candidates, and an
    /// index reports the candidates' recall of the exact top 10.
    Means,
    /// Exactly: the Euclidean order of these points is the order of [`ClosedForm::rank`], so a
    /// Euclidean graph over the gallery's points finds the exact neighbours.
    Exact {
        /// D′ of embeddings in D dimensions.
        point_dim: fn(usize) -> usize,
        /// `G` inputs in `D` dimensions → `[G, D′]`.
        gallery_points: fn(&Embedding) -> Tensor,
        /// `P` inputs → `[P, D′]`.
        probe_points: fn(&Embedding) -> Tensor,
    },
}

/// The learnable soft threshold p(m | z1, z2) = σ(−a‖z1 − z2‖ + b), with a = softplus(a_raw) > 0,
/// or the closed form of the loss that trained it ([`Matching`]).
#[derive(Debug)]
pub struct MatchHead {
    pub a_raw: Tensor,
    pub b: Tensor,
    /// Which function of the embeddings the match probability is.
    pub matching: Matching,
}

impl MatchHead {
    /// A CPU copy (the evaluation works on CPU tensors whatever device trained the model).
    pub fn to_cpu(&self) -> MatchHead {
        MatchHead {
            a_raw: self.a_raw.to_device(tch::Device::Cpu),
            b: self.b.to_device(tch::Device::Cpu),
            matching: self.matching,
        }
    }

    pub fn new(vs: nn::Path, init_a: f64, init_b: f64) -> Self {
        // softplus⁻¹(a) = ln(eᵃ − 1), written stably for large a.
        let a_raw = if init_a > 20.0 { init_a } else { init_a.exp_m1().ln() };
        MatchHead {
            a_raw: vs.var("a_raw", &[], nn::Init::Const(a_raw)),
            b: vs.var("b", &[], nn::Init::Const(init_b)),
            matching: Matching::Hib,
        }
    }

    /// The same head scoring by `matching`.
    pub fn with_matching(mut self, matching: Matching) -> Self {
        self.matching = matching;
        self
    }

    /// The head's closed form, if its match probability is one.
    pub fn closed_form(&self) -> Option<&'static ClosedForm> {
        self.matching.closed_form()
    }

    /// The scale a > 0.
    pub fn a(&self) -> Tensor {
        self.a_raw.softplus()
    }

    /// Logits −a‖z1_i − z2_j‖ + b for every pair of samples.
    ///
    /// # Shapes
    /// `z1`: `[B, K1, D]`, `z2`: `[B, K2, D]`; returns `[B, K1, K2]`.
    pub fn logits(&self, z1: &Tensor, z2: &Tensor) -> Tensor {
        let diff = z1.unsqueeze(2) - z2.unsqueeze(1);
        let dist = (diff.square().sum_dim_intlist([3i64].as_slice(), false, Kind::Float) + DISTANCE_EPS).sqrt();
        -self.a() * dist + &self.b
    }

    /// Monte-Carlo log p(m | x1, x2) and log(1 − p(m | x1, x2)) (Eq. 5), computed as log-sum-exp
    /// over the K1·K2 pair log-sigmoids so that neither underflows.
    ///
    /// # Shapes
    /// `z1`: `[B, K1, D]`, `z2`: `[B, K2, D]`; returns two `[B]`.
    pub fn log_match(&self, z1: &Tensor, z2: &Tensor) -> (Tensor, Tensor) {
        let logits = self.logits(z1, z2);
        let pairs = (logits.size()[1] * logits.size()[2]) as f64;
        let dims = [1i64, 2].as_slice();
        let log_p = logits.log_sigmoid().logsumexp(dims, false) - pairs.ln();
        let log_not_p = (-&logits).log_sigmoid().logsumexp(dims, false) - pairs.ln();
        (log_p, log_not_p)
    }

    /// p(m | x1, x2) by Monte Carlo with `k` samples from each embedding (a closed-form head:
    /// its closed form, `k` unused).
    ///
    /// # Shapes
    /// returns `[B]`.
    pub fn match_probability(&self, e1: &Embedding, e2: &Embedding, k: i64) -> Tensor {
        if let Some(form) = self.closed_form() {
            return (form.probability)(self, e1, e2);
        }
        self.log_match(&e1.sample(k), &e2.sample(k)).0.exp()
    }

    /// Self-mismatch uncertainty η(x) = 1 − p(m | x, x) (Eq. 9), from two independent sample sets
    /// (a closed-form head: its closed form, `k` unused).
    ///
    /// # Shapes
    /// returns `[B]`.
    pub fn self_mismatch(&self, e: &Embedding, k: i64) -> Tensor {
        if let Some(form) = self.closed_form() {
            return (form.self_mismatch)(self, e);
        }
        self.log_match(&e.sample(k), &e.sample(k)).1.exp()
    }
}

/// Soft contrastive loss (Eq. 3) per pair from Monte-Carlo log-probabilities.
///
/// # Shapes
/// `log_p`, `log_not_p`: `[B]`; `is_match`: `[B]` bool; returns `[B]`.
pub fn soft_contrastive(log_p: &Tensor, log_not_p: &Tensor, is_match: &Tensor) -> Tensor {
    -log_p.where_self(is_match, log_not_p)
}

/// Contrastive loss (Eq. 1): ‖z1 − z2‖² for matches, max(M − ‖z1 − z2‖, 0)² otherwise.
///
/// # Shapes
/// `z1`, `z2`: `[B, D]`; `is_match`: `[B]` bool; returns `[B]`.
pub fn contrastive(z1: &Tensor, z2: &Tensor, is_match: &Tensor, margin: f64) -> Tensor {
    let sq = (z1 - z2).square().sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
    let dist = (&sq + DISTANCE_EPS).sqrt();
    let push = (-dist + margin).relu().square();
    sq.where_self(is_match, &push)
}

/// The parts of one VIB step (Eq. 8), averaged over the pairs of the batch.
#[derive(Debug)]
pub struct VibLoss {
    /// Pair term plus β times the KL term: what is minimised.
    pub total: Tensor,
    /// Mean pair loss.
    pub pair: Tensor,
    /// Mean of KL(p(z1|x1) ‖ r) + KL(p(z2|x2) ‖ r).
    pub kl: Tensor,
}

/// The VIB embedding loss of Eq. 8 for a batch of pairs, with `k` samples per input.
///
/// # Shapes
/// `left`, `right`: `B` inputs each; `is_match`: `[B]` bool.
pub fn vib_loss(
    head: &MatchHead,
    left: &Embedding,
    right: &Embedding,
    is_match: &Tensor,
    k: i64,
    beta: f64,
) -> VibLoss {
    let z1 = left.sample(k);
    let z2 = right.sample(k);
    let (log_p, log_not_p) = head.log_match(&z1, &z2);
    let pair = soft_contrastive(&log_p, &log_not_p, is_match).mean(Kind::Float);
    let kl = (left.kl_to_standard_normal(&z1) + right.kl_to_standard_normal(&z2)).mean(Kind::Float);
    let total = if beta > 0.0 { &pair + &kl * beta } else { pair.shallow_clone() };
    VibLoss { total, pair, kl }
}

/// The VIB loss over every pair of a batch (`pair_set = all`): the matching and the
/// non-matching pairs' mean soft contrastive losses, each weighted 1/2 (what balanced sampling
/// gives in expectation), plus β times twice the mean KL per image (a pair holds two inputs, as
/// in Eq. 8). Each image's K samples are drawn once and shared by all its pairs.
///
/// Returns (total, pair, kl).
pub fn all_pair_loss(
    matcher: &MatchHead,
    embedding: &Embedding,
    (left, right, is_match): (&Tensor, &Tensor, &Tensor),
    k: i64,
    beta: f64,
) -> (Tensor, Tensor, Tensor) {
    let z = embedding.sample(k);
    let (log_p, log_not_p) = matcher.log_match(&z.index_select(0, left), &z.index_select(0, right));
    let per_pair = soft_contrastive(&log_p, &log_not_p, is_match);
    let pos = is_match.to_kind(Kind::Float);
    let neg = 1.0 - &pos;
    let matching = (&per_pair * &pos).sum(Kind::Float) / pos.sum(Kind::Float);
    let non_matching = (&per_pair * &neg).sum(Kind::Float) / neg.sum(Kind::Float);
    let pair = (matching + non_matching) * 0.5;
    let kl = embedding.kl_to_standard_normal(&z).mean(Kind::Float) * 2.0;
    let total = if beta > 0.0 { &pair + &kl * beta } else { pair.shallow_clone() };
    (total, pair, kl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    fn head(a: f64, b: f64) -> (nn::VarStore, MatchHead) {
        let vs = nn::VarStore::new(Device::Cpu);
        let h = MatchHead::new(vs.root() / "match", a, b);
        (vs, h)
    }

    fn sigmoid(t: f64) -> f64 {
        1.0 / (1.0 + (-t).exp())
    }

    fn gaussian(mean: &[f32], var: f32, d: i64) -> Embedding {
        let b = mean.len() as i64 / d;
        Embedding {
            mean: Tensor::from_slice(mean).reshape([b, 1, d]),
            variance: Some(Tensor::full([b, 1, d], var as f64, (Kind::Float, Device::Cpu))),
        }
    }

    #[test]
    fn vanishing_variance_gives_the_point_match_probability() {
        let _generator = crate::seeded_generator(0);
        let (_vs, h) = head(2.0, 1.5);
        let e1 = gaussian(&[0.3, -0.4, 1.0, 1.0], 1e-12, 2);
        let e2 = gaussian(&[0.0, 0.0, 1.0, 2.0], 1e-12, 2);
        let p = h.match_probability(&e1, &e2, 8);
        // ‖(0.3, −0.4)‖ = 0.5 and ‖(0, −1)‖ = 1.
        for (i, dist) in [0.5, 1.0].iter().enumerate() {
            let want = sigmoid(-2.0 * dist + 1.5);
            assert!((p.double_value(&[i as i64]) - want).abs() < 1e-5);
        }
    }

    #[test]
    fn self_mismatch_of_a_point_mass_is_one_minus_sigmoid_b() {
        let _generator = crate::seeded_generator(0);
        let (_vs, h) = head(3.0, 0.8);
        let point = Embedding::point(Tensor::from_slice(&[0.2f32, 0.9]).reshape([1, 2]));
        let eta = h.self_mismatch(&point, 8).double_value(&[0]);
        assert!((eta - (1.0 - sigmoid(0.8))).abs() < 1e-5, "{eta}");
        let narrow = gaussian(&[0.2, 0.9], 1e-14, 2);
        let eta = h.self_mismatch(&narrow, 8).double_value(&[0]);
        assert!((eta - (1.0 - sigmoid(0.8))).abs() < 1e-5, "{eta}");
        // A wide embedding is less sure it matches itself.
        let wide = gaussian(&[0.2, 0.9], 4.0, 2);
        assert!(h.self_mismatch(&wide, 8).double_value(&[0]) > eta + 0.1);
    }

    #[test]
    fn log_sum_exp_form_equals_the_plain_average_and_stays_finite() {
        let _generator = crate::seeded_generator(3);
        let (_vs, h) = head(1.3, 0.2);
        let z1 = Tensor::randn([4, 8, 3], (Kind::Float, Device::Cpu));
        let z2 = Tensor::randn([4, 8, 3], (Kind::Float, Device::Cpu));
        let (log_p, log_not_p) = h.log_match(&z1, &z2);
        let plain = h.logits(&z1, &z2).sigmoid().mean_dim([1i64, 2].as_slice(), false, Kind::Float);
        assert!(f64::try_from((log_p.exp() - &plain).abs().max()).unwrap() < 1e-6);
        assert!(f64::try_from((log_not_p.exp() + &plain - 1.0).abs().max()).unwrap() < 1e-6);
        // Far-apart embeddings: p underflows in f32, its log does not.
        let far = Tensor::full([1, 8, 3], 1e4, (Kind::Float, Device::Cpu));
        let near = Tensor::zeros([1, 8, 3], (Kind::Float, Device::Cpu));
        let (lp, _) = h.log_match(&far, &near);
        assert!(lp.double_value(&[0]).is_finite() && lp.double_value(&[0]) < -1e3);
    }

    #[test]
    fn gradients_reach_a_b_and_the_embeddings() {
        // Every test that draws holds the generator: an unguarded draw here once landed inside
        // `evaluations_in_parallel_threads_give_their_seeds_numbers`' Monte Carlo and failed it.
        let _generator = crate::seeded_generator(4);
        let (vs, h) = head(1.0, 0.0);
        let mean = Tensor::randn([6, 1, 2], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let var = Tensor::full([6, 1, 2], 0.3, (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let e = Embedding { mean: mean.shallow_clone(), variance: Some(var.shallow_clone()) };
        let is_match = Tensor::from_slice(&[true, false, true]);
        let loss = vib_loss(&h, &e.narrow(0, 3), &e.narrow(3, 3), &is_match, 8, 1e-2);
        loss.total.backward();
        for (name, t) in vs.variables() {
            let g = f64::try_from(t.grad().abs().sum(Kind::Float)).unwrap();
            assert!(g > 0.0 && g.is_finite(), "no gradient for {name}");
        }
        assert!(f64::try_from(mean.grad().abs().sum(Kind::Float)).unwrap() > 0.0);
        assert!(f64::try_from(var.grad().abs().sum(Kind::Float)).unwrap() > 0.0);
    }

    #[test]
    fn contrastive_loss_matches_equation_1() {
        let z1 = Tensor::from_slice(&[0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0]).reshape([3, 2]);
        let z2 = Tensor::from_slice(&[3.0f32, 4.0, 0.3, 0.4, 3.0, 4.0]).reshape([3, 2]);
        let m = Tensor::from_slice(&[true, false, false]);
        let l = contrastive(&z1, &z2, &m, 2.0);
        let got: Vec<f64> = (0..3).map(|i| l.double_value(&[i])).collect();
        // match at distance 5 → 25; non-match at 0.5 with M = 2 → 1.5² = 2.25; at 5 → 0.
        for (g, w) in got.iter().zip([25.0, 2.25, 0.0]) {
            assert!((g - w).abs() < 1e-4, "{got:?}");
        }
    }
}
