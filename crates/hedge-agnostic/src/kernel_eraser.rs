//! Iterative kernel erasure (`{"kind": "kernel", "rounds": 3, "features": 512}`): LEACE in the
//! feature space of an RBF kernel, in the manner of Obliviator (NeurIPS 2025), which erases in a
//! kernel's feature space round after round.
//!
//! Each round maps the rows to random Fourier features φ(x) of RBF kernels at three bandwidths
//! (¼, 1 and 4 over the median squared distance of the standardised rows), erases the concept
//! from φ with LEACE — after which every *linear function of φ*, i.e. every function of the
//! kernels' (approximate) RKHS, has the same mean in every concept class: the classes' kernel
//! mean embeddings coincide and their MMD is 0 — and keeps the erased features' first d
//! principal axes (kernel PCA of the erased features) as the new rows, d the input width. The
//! next round starts from those, so dependence left in their joint distribution (a product of
//! two coordinates, say) is a mean difference of the next round's kernel features and is erased
//! there. No concept label is read when erasing: the fitted map applies to any row. The rows
//! come out in new coordinates, so strengths below 1 mix the input with its image; the number
//! of rounds is the eraser's strength knob.
//!
//! LEACE in a characteristic kernel's RKHS would leave the class-conditional distributions
//! equal (no probe of any kind reads the concept); with finitely many random features and the
//! map back it is an approximation, which the audit's ladder measures.

use faer::Mat;
use tch::{Device, Kind, Tensor};

use crate::eraser::{Eraser, FittedEraser, Registration};
use crate::erasure::{check_rows, Leace};
use crate::error::{invalid, Result};

/// The registration [`crate::erasers::ERASERS`] lists.
pub const REGISTRATION: Registration = Registration {
    kind: "kernel",
    about: "iterative kernel erasure: LEACE on random Fourier features of RBF kernels, then their first d principal axes, `rounds` times (default 3, 512 features)",
    build: |spec| {
        spec.only(&["rounds", "features", "keep-task"])?;
        let rounds = spec.count("rounds", 3)?;
        let features = spec.count("features", 512)?;
        let keep_task = spec.count("keep-task", 0)?;
        if keep_task > 1 {
            return Err(invalid("eraser parameter", keep_task, "keep-task is 0 (off) or 1 (on)"));
        }
        if rounds == 0 || !(6..=8192).contains(&features) {
            return Err(invalid(
                "eraser parameter",
                format!("rounds {rounds}, features {features}"),
                "kernel erasure takes at least 1 round and 6 to 8,192 random features",
            ));
        }
        Ok(Box::new(KernelEraser { rounds, features, keep_task: keep_task == 1 }))
    },
};

/// The eraser, before fitting.
pub struct KernelEraser {
    pub rounds: usize,
    /// Random Fourier features per round, split evenly over the three bandwidths.
    pub features: usize,
    /// Where the task's labels are known (post-hoc removal): keep, each round, the erased
    /// features' directions between the task's class means before the principal axes, so the
    /// task's signal is not left to the variance.
    pub keep_task: bool,
}

/// One fitted round: standardise, random Fourier features, LEACE, back to the rows' coordinates.
struct Round {
    mean: Tensor,
    std: Tensor,
    /// `[d, D]`, `[D]`.
    weights: Tensor,
    offsets: Tensor,
    /// LEACE on φ: φ − (φ − μ_φ) Pᵀ.
    leace_mean: Tensor,
    leace_projection_t: Tensor,
    /// The erased features' mean `[1, D]` and first d principal axes `[D, d]`: the round's output
    /// is (φ_erased − mean) · back.
    back_mean: Tensor,
    back: Tensor,
}

impl Round {
    fn features(&self, x: &Tensor) -> Tensor {
        let z = (x - &self.mean) / &self.std;
        let d = self.weights.size()[1] as f64;
        (z.matmul(&self.weights) + &self.offsets).cos() * (2.0 / d).sqrt()
    }

    fn erased_features(&self, x: &Tensor) -> Tensor {
        let phi = self.features(x);
        &phi - (&phi - &self.leace_mean).matmul(&self.leace_projection_t)
    }

    fn apply(&self, x: &Tensor) -> Tensor {
        (self.erased_features(x) - &self.back_mean).matmul(&self.back)
    }
}

struct Fitted {
    rounds: Vec<Round>,
    d: usize,
}

fn to_vec(t: &Tensor) -> Result<Vec<f64>> {
    Ok(Vec::<f64>::try_from(t.to_kind(Kind::Double).contiguous().flatten(0, -1))?)
}

fn mat_to_tensor(m: &Mat<f64>) -> Tensor {
    let (r, c) = (m.nrows(), m.ncols());
    let flat: Vec<f64> = (0..r).flat_map(|i| (0..c).map(move |j| (i, j))).map(|(i, j)| m[(i, j)]).collect();
    Tensor::from_slice(&flat).reshape([r as i64, c as i64])
}

impl Eraser for KernelEraser {
    fn fit(&self, x: &[f64], d: usize, z: &[i64], weights: Option<&[f64]>, seed: u64) -> Result<Box<dyn FittedEraser>> {
        self.fit_rounds(x, d, z, None, weights, seed)
    }

    fn fit_for_task(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        target: &[i64],
        weights: Option<&[f64]>,
        seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        self.fit_rounds(x, d, z, self.keep_task.then_some(target), weights, seed)
    }
}

/// Orthonormal directions (columns, `[D, r]`) between the task's class means of `centred` rows
/// and their overall mean (r ≤ classes − 1), by Gram–Schmidt.
fn task_directions(centred: &Tensor, target: &[i64]) -> Tensor {
    let classes = target.iter().copied().max().unwrap_or(0) + 1;
    let labels = Tensor::from_slice(target);
    let mut basis: Vec<Tensor> = Vec::new();
    for c in 0..classes {
        let rows = labels.eq(c).nonzero().squeeze_dim(1);
        if rows.size()[0] == 0 {
            continue;
        }
        let mut v = centred.index_select(0, &rows).mean_dim(0, false, Kind::Double);
        let scale = v.norm().double_value(&[]);
        for u in &basis {
            v = &v - u * u.dot(&v);
        }
        let norm = v.norm().double_value(&[]);
        // Binary classes give one direction: the second is the first's negative.
        if norm > 1e-6 * scale.max(1e-300) {
            basis.push(v / norm);
        }
    }
    let size = centred.size()[1];
    if basis.is_empty() {
        Tensor::zeros([size, 0], (Kind::Double, Device::Cpu))
    } else {
        Tensor::stack(&basis, 1)
    }
}

impl KernelEraser {
    fn fit_rounds(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        target: Option<&[i64]>,
        weights: Option<&[f64]>,
        seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        let n = check_rows(x, d, z)?;
        let big_d = self.features as i64;
        // φ and its erased copy (n × D each), LEACE's D × D matrices: what fitting takes.
        hedge_run::Footprint::new("fitting a kernel eraser", move |v| 8.0 * (3.0 * v[0] * v[1] + 6.0 * v[1] * v[1]))
            .knob("rows", n as f64, 2.0)
            .knob("random features", big_d as f64, 1.0)
            .check()?;
        let _generator = crate::seeded_generator(seed as i64 + 4099);
        let options = (Kind::Double, Device::Cpu);
        let mut current = Tensor::from_slice(x).reshape([n as i64, d as i64]);
        let mut rounds = Vec::with_capacity(self.rounds);
        for _ in 0..self.rounds {
            let mean = current.mean_dim(0, true, Kind::Double);
            let std = current.std_dim(0, false, true).clamp_min(1e-9);
            let standardised = (&current - &mean) / &std;
            // The median heuristic on (at most) 2,000 random pairs.
            let pairs = 2000.min(n as i64);
            let a = Tensor::randint(n as i64, [pairs], (Kind::Int64, Device::Cpu));
            let b = Tensor::randint(n as i64, [pairs], (Kind::Int64, Device::Cpu));
            let distances = (standardised.index_select(0, &a) - standardised.index_select(0, &b))
                .square()
                .sum_dim_intlist([1].as_slice(), false, Kind::Double);
            let median = distances.median().double_value(&[]).max(1e-12);
            let per = big_d / 3;
            let widths = [per, per, big_d - 2 * per];
            let blocks: Vec<Tensor> = [0.25, 1.0, 4.0]
                .iter()
                .zip(widths)
                .map(|(c, w)| Tensor::randn([d as i64, w], options) * (2.0 * c / median).sqrt())
                .collect();
            let frequencies = Tensor::cat(&blocks, 1);
            let offsets = Tensor::rand([big_d], options) * (2.0 * std::f64::consts::PI);
            let mut round = Round {
                mean,
                std,
                weights: frequencies,
                offsets,
                leace_mean: Tensor::zeros([1, big_d], options),
                leace_projection_t: Tensor::zeros([big_d, big_d], options),
                back_mean: Tensor::zeros([1, big_d], options),
                back: Tensor::zeros([big_d, d as i64], options),
            };
            let phi = round.features(&current);
            let leace = Leace::fit_weighted(&to_vec(&phi)?, big_d as usize, z, weights)?;
            round.leace_mean = Tensor::from_slice(&leace.mean).reshape([1, big_d]);
            round.leace_projection_t = mat_to_tensor(&leace.projection).transpose(0, 1).contiguous();
            let erased = round.erased_features(&current);
            // The erased features' first d principal axes: the next round's rows.
            let centre = erased.mean_dim(0, true, Kind::Double);
            let centred = &erased - &centre;
            // With the task's labels: its class-mean directions first, the principal axes of
            // what is left after them.
            let kept = match target {
                // At most d − 1 of them: one principal axis at least.
                Some(t) => {
                    let directions = task_directions(&centred, t);
                    let r = directions.size()[1].min(d as i64 - 1).max(0);
                    directions.narrow(1, 0, r)
                }
                None => Tensor::zeros([big_d, 0], options),
            };
            let rest = &centred - centred.matmul(&kept).matmul(&kept.transpose(0, 1));
            let covariance = rest.transpose(0, 1).matmul(&rest) / n as f64;
            let (_, axes) = covariance.f_linalg_eigh("L")?;
            let principal = axes.flip([1]).narrow(1, 0, d as i64 - kept.size()[1]);
            round.back_mean = centre;
            round.back = Tensor::cat(&[kept, principal], 1).contiguous();
            current = round.apply(&current);
            rounds.push(round);
        }
        Ok(Box::new(Fitted { rounds, d }))
    }
}

impl FittedEraser for Fitted {
    fn rank(&self) -> usize {
        // Every direction moves.
        self.d
    }

    fn displacement(&self, x: &Tensor, _concept: &Tensor) -> Tensor {
        let x = x.to_kind(Kind::Double);
        let mut current = x.shallow_clone();
        for round in &self.rounds {
            current = round.apply(&current);
        }
        current - x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eraser::EraserSpec;
    use crate::erasure::Erasure;
    use crate::ladder::{ProbeFamily, QuadraticProbe, RbfProbe};

    /// A concept carried by the *spread* of two coordinates (equal means: LEACE has nothing to
    /// remove) beside a target carried by a third. Kernel erasure, fitted on one split and applied
    /// to another without labels, leaves every linear function of its output with equal class
    /// means (the linear rung at chance), lowers what the quadratic and RBF rungs read by at least
    /// 0.05 in three rounds — not to chance: each round equalises means of one kernel's features,
    /// and the concept's spread comes back in the next round's products — and keeps the target.
    /// Told the task (`keep-task`), each round keeps the direction between the task's class
    /// means: the target reads at least as well as without it, and the concept's linear rung
    /// stays at chance.
    #[test]
    fn keeping_the_task_keeps_the_target_at_least_as_readable() {
        let _generator = crate::seeded_generator(12);
        let sample = |n: i64| {
            let concept = Tensor::randint(2, [n], (Kind::Int64, Device::Cpu));
            let spread = concept.to_kind(Kind::Double).unsqueeze(1) * 1.5 + 0.5;
            let e = Tensor::randn([n, 6], (Kind::Double, Device::Cpu));
            // A weak target: one low-variance coordinate among high-variance ones.
            let target = e.select(1, 2).gt(0.0).to_kind(Kind::Int64);
            let x = Tensor::cat(&[e.narrow(1, 0, 2) * &spread, e.narrow(1, 2, 1) * 0.3, e.narrow(1, 3, 3) * 3.0], 1);
            (x, concept, target)
        };
        let ((x, c, t), (xt, ct, tt)) = (sample(4000), sample(3000));
        let blank = |n: i64| Tensor::zeros([n], (Kind::Int64, Device::Cpu));
        let f = |v: &Tensor| v.to_kind(Kind::Float);
        let linear = crate::ladder::LinearProbe { steps: 300 };
        let mut kept = Vec::new();
        for keep in [0, 1] {
            let eraser = EraserSpec::new("kernel").with("rounds", 4).with("keep-task", keep).build().unwrap();
            let erasure = Erasure::fit_for_task(eraser.as_ref(), 1.0, &x, &c, &t, None, 0).unwrap();
            let (ex, ext) = (erasure.erase(&x, &blank(4000)), erasure.erase(&xt, &blank(3000)));
            let concept = linear.fit_and_score(&f(&ex), &c, &f(&ext), &ct, 0).unwrap();
            assert!(concept.at_chance, "keep-task {keep}: {concept:?}");
            kept.push(linear.fit_and_score(&f(&ex), &t, &f(&ext), &tt, 0).unwrap().accuracy);
        }
        assert!(
            kept[1] > 0.9 && kept[1] >= kept[0] - 0.005,
            "target read {} with the task kept, {} without",
            kept[1],
            kept[0]
        );
        let e = EraserSpec::new("kernel").with("keep-task", 2).build().err().unwrap().to_string();
        assert!(e.contains("keep-task"), "{e}");
    }

    #[test]
    fn kernel_erasure_removes_a_non_linear_concept_and_keeps_the_target() {
        let _generator = crate::seeded_generator(11);
        let sample = |n: i64| {
            let concept = Tensor::randint(2, [n], (Kind::Int64, Device::Cpu));
            let spread = concept.to_kind(Kind::Double).unsqueeze(1) * 1.5 + 0.5;
            let e = Tensor::randn([n, 4], (Kind::Double, Device::Cpu));
            let target = e.select(1, 2).gt(0.0).to_kind(Kind::Int64);
            let x = Tensor::cat(&[e.narrow(1, 0, 2) * &spread, e.narrow(1, 2, 2)], 1);
            (x, concept, target)
        };
        let ((x, c, t), (xt, ct, tt)) = (sample(4000), sample(3000));
        let eraser = EraserSpec::new("kernel").build().unwrap();
        let erasure = Erasure::fit(eraser.as_ref(), 1.0, &x, &c, None, 0).unwrap();
        let blank = |n: i64| Tensor::zeros([n], (Kind::Int64, Device::Cpu));
        let (ex, ext) = (erasure.erase(&x, &blank(4000)), erasure.erase(&xt, &blank(3000)));
        let probes: [Box<dyn ProbeFamily>; 2] = [
            Box::new(QuadraticProbe { steps: 300, principal: 32 }),
            Box::new(RbfProbe { steps: 300, features: 512, bandwidths: vec![0.25, 1.0, 4.0] }),
        ];
        let f = |v: &Tensor| v.to_kind(Kind::Float);
        for probe in &probes {
            let before = probe.fit_and_score(&f(&x), &c, &f(&xt), &ct, 0).unwrap();
            let after = probe.fit_and_score(&f(&ex), &c, &f(&ext), &ct, 0).unwrap();
            assert!(before.accuracy > 0.85, "{}: {before:?}", probe.name());
            assert!(
                after.accuracy < before.accuracy - 0.05,
                "{}: {} -> {}",
                probe.name(),
                before.accuracy,
                after.accuracy
            );
        }
        let linear = crate::ladder::LinearProbe { steps: 300 };
        let concept = linear.fit_and_score(&f(&ex), &c, &f(&ext), &ct, 0).unwrap();
        assert!(concept.at_chance, "{concept:?}");
        let kept = linear.fit_and_score(&f(&ex), &t, &f(&ext), &tt, 0).unwrap();
        assert!(kept.accuracy > 0.9, "{kept:?}");
    }
}
