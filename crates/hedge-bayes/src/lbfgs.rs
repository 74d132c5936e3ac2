//! Limited-memory BFGS with a backtracking (Armijo) line search, for smooth objectives such as
//! the negative log marginal likelihood. An objective may return a non-finite value for points
//! it cannot evaluate (an indefinite kernel matrix, say); the line search then steps back.

/// Stopping rules and memory of the optimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lbfgs {
    /// Maximum number of iterations (accepted steps).
    pub max_iters: usize,
    /// Number of (s, y) pairs kept.
    pub memory: usize,
    /// Stop when the largest gradient component falls below this.
    pub gradient_tolerance: f64,
    /// Stop when (f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) falls below this (scipy's `ftol`).
    pub relative_tolerance: f64,
}

impl Default for Lbfgs {
    fn default() -> Self {
        Self { max_iters: 200, memory: 10, gradient_tolerance: 1e-5, relative_tolerance: 2.2e-9 }
    }
}

/// Where the optimiser stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    /// The best point found.
    pub x: Vec<f64>,
    /// The objective there.
    pub value: f64,
    /// Accepted steps.
    pub iterations: usize,
    /// Objective evaluations, line search included.
    pub evaluations: usize,
    /// Why it stopped.
    pub stop: &'static str,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Lbfgs {
    /// Minimises `objective`, which returns the value and gradient at a point.
    pub fn minimise(&self, objective: impl FnMut(&[f64]) -> (f64, Vec<f64>), x0: Vec<f64>) -> Minimum {
        self.minimise_observed(objective, x0, &mut |_, _| {})
    }

    /// As [`Lbfgs::minimise`], calling `observer(iteration, value)` after every accepted step.
    pub fn minimise_observed(
        &self,
        mut objective: impl FnMut(&[f64]) -> (f64, Vec<f64>),
        x0: Vec<f64>,
        observer: &mut dyn FnMut(usize, f64),
    ) -> Minimum {
        let mut x = x0;
        let (mut f, mut g) = objective(&x);
        let mut evaluations = 1;
        if !f.is_finite() {
            return Minimum { x, value: f, iterations: 0, evaluations, stop: "objective not finite at the start" };
        }
        let mut history: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> = Default::default();
        for iteration in 0..self.max_iters {
            if g.iter().fold(0.0f64, |m, v| m.max(v.abs())) < self.gradient_tolerance {
                return Minimum { x, value: f, iterations: iteration, evaluations, stop: "gradient tolerance" };
            }
            // Two-loop recursion: d = −H g.
            let mut q: Vec<f64> = g.clone();
            let mut alphas = Vec::with_capacity(history.len());
            for (s, y, rho) in history.iter().rev() {
                let a = rho * dot(s, &q);
                for (qi, yi) in q.iter_mut().zip(y) {
                    *qi -= a * yi;
                }
                alphas.push(a);
            }
            let gamma = match history.back() {
                Some((s, y, _)) => dot(s, y) / dot(y, y),
                None => 1.0 / dot(&g, &g).sqrt().max(1e-12),
            };
            for qi in q.iter_mut() {
                *qi *= gamma;
            }
            for ((s, y, rho), a) in history.iter().zip(alphas.iter().rev()) {
                let b = rho * dot(y, &q);
                for (qi, si) in q.iter_mut().zip(s) {
                    *qi += (a - b) * si;
                }
            }
            let mut direction: Vec<f64> = q.iter().map(|v| -v).collect();
            let mut slope = dot(&direction, &g);
            if slope >= 0.0 {
                // Not a descent direction (curvature information went stale): restart.
                history.clear();
                direction = g.iter().map(|v| -v).collect();
                let scale = 1.0 / dot(&g, &g).sqrt().max(1e-12);
                direction.iter_mut().for_each(|d| *d *= scale);
                slope = dot(&direction, &g);
            }
            let mut step = 1.0;
            let mut accepted = None;
            for _ in 0..40 {
                let trial: Vec<f64> = x.iter().zip(&direction).map(|(xi, di)| xi + step * di).collect();
                let (ft, gt) = objective(&trial);
                evaluations += 1;
                if ft.is_finite() && ft <= f + 1e-4 * step * slope {
                    accepted = Some((trial, ft, gt));
                    break;
                }
                step *= 0.5;
            }
            let Some((x_new, f_new, g_new)) = accepted else {
                return Minimum { x, value: f, iterations: iteration, evaluations, stop: "line search failed" };
            };
            let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
            let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
            let sy = dot(&s, &y);
            if sy > 1e-10 * dot(&y, &y).sqrt() * dot(&s, &s).sqrt() {
                if history.len() == self.memory {
                    history.pop_front();
                }
                history.push_back((s, y, 1.0 / sy));
            }
            let relative = (f - f_new) / f.abs().max(f_new.abs()).max(1.0);
            x = x_new;
            f = f_new;
            g = g_new;
            observer(iteration + 1, f);
            if relative < self.relative_tolerance {
                return Minimum { x, value: f, iterations: iteration + 1, evaluations, stop: "relative tolerance" };
            }
        }
        Minimum { x, value: f, iterations: self.max_iters, evaluations, stop: "iteration limit" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_rosenbrock_minimum() {
        let rosenbrock = |x: &[f64]| {
            let (a, b) = (x[0], x[1]);
            let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
            let g = vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)];
            (f, g)
        };
        let opt = Lbfgs { max_iters: 500, relative_tolerance: 0.0, gradient_tolerance: 1e-8, ..Default::default() };
        let m = opt.minimise(rosenbrock, vec![-1.2, 1.0]);
        assert!((m.x[0] - 1.0).abs() < 1e-5 && (m.x[1] - 1.0).abs() < 1e-5, "{m:?}");
    }

    #[test]
    fn steps_back_from_points_it_cannot_evaluate() {
        // f(x) = x − log x is undefined for x ≤ 0; its minimum is at x = 1.
        let f =
            |x: &[f64]| if x[0] <= 0.0 { (f64::NAN, vec![0.0]) } else { (x[0] - x[0].ln(), vec![1.0 - 1.0 / x[0]]) };
        let m = Lbfgs::default().minimise(f, vec![5.0]);
        assert!((m.x[0] - 1.0).abs() < 1e-4, "{m:?}");
    }
}
