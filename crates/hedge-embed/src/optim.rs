//! Adam whose moments can be saved and restored, so a resumed run continues exactly where it
//! stopped (libtorch's own optimiser state is not reachable through tch).

use std::path::Path;

use tch::{nn, Kind, Tensor};

use crate::{EmbedError, Result};

/// Adam (Kingma & Ba) with bias correction, β1 = 0.9, β2 = 0.999, ε = 1e-8, and optional
/// decoupled weight decay (AdamW, Loshchilov & Hutter: each step multiplies a decayed weight by
/// 1 − lr · scale · decay before the Adam update, as `torch.optim.AdamW` does).
#[derive(Debug)]
pub struct Adam {
    pub learning_rate: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    step: i64,
    /// (name, parameter, first moment, second moment), sorted by name.
    slots: Vec<(String, Tensor, Tensor, Tensor)>,
    /// Learning-rate multiplier of each slot (1 unless set by [`Adam::scale_learning_rate`]).
    scales: Vec<f64>,
    /// Decoupled weight decay of each slot (0 unless set by [`Adam::set_weight_decay`]).
    decays: Vec<f64>,
}

impl Adam {
    /// Adam over every trainable variable of `vs`.
    pub fn new(vs: &nn::VarStore, learning_rate: f64) -> Self {
        let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let slots = vars
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .map(|(name, p)| {
                let m = p.zeros_like();
                let v = p.zeros_like();
                (name, p, m, v)
            })
            .collect::<Vec<_>>();
        let scales = vec![1.0; slots.len()];
        let decays = vec![0.0; slots.len()];
        Adam { learning_rate, beta1: 0.9, beta2: 0.999, eps: 1e-8, step: 0, slots, scales, decays }
    }

    /// Multiplies the learning rate of every variable whose name starts with `prefix` by
    /// `scale` (e.g. the match head's a and b, which otherwise move one learning rate a step);
    /// returns how many variables it applies to.
    pub fn scale_learning_rate(&mut self, prefix: &str, scale: f64) -> usize {
        let mut n = 0;
        for ((name, ..), s) in self.slots.iter().zip(&mut self.scales) {
            if name.starts_with(prefix) {
                *s = scale;
                n += 1;
            }
        }
        n
    }

    /// Sets the decoupled weight decay of every variable whose name `applies` accepts (e.g. the
    /// conv and linear weights, not their biases); returns how many variables it applies to.
    pub fn set_weight_decay(&mut self, decay: f64, applies: impl Fn(&str) -> bool) -> usize {
        let mut n = 0;
        for ((name, ..), d) in self.slots.iter().zip(&mut self.decays) {
            if applies(name) {
                *d = decay;
                n += 1;
            }
        }
        n
    }

    /// Optimiser steps taken so far.
    pub fn steps_taken(&self) -> i64 {
        self.step
    }

    pub fn zero_grad(&mut self) {
        for (_, p, _, _) in &mut self.slots {
            let mut g = p.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
    }

    /// One update from the gradients currently stored on the parameters.
    pub fn step(&mut self) {
        self.step += 1;
        let t = self.step as i32;
        let bias1 = 1.0 - self.beta1.powi(t);
        let bias2 = 1.0 - self.beta2.powi(t);
        let (b1, b2, eps, lr) = (self.beta1, self.beta2, self.eps, self.learning_rate);
        tch::no_grad(|| {
            for (((_, p, m, v), scale), decay) in self.slots.iter_mut().zip(&self.scales).zip(&self.decays) {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                if *decay > 0.0 {
                    let _ = p.g_mul_scalar_(1.0 - lr * scale * decay);
                }
                let _ = m.g_mul_scalar_(b1).g_add_(&(&g * (1.0 - b1)));
                let _ = v.g_mul_scalar_(b2).g_add_(&(g.square() * (1.0 - b2)));
                let denom = (&*v / bias2).sqrt() + eps;
                let _ = p.g_sub_(&(&*m / &denom * (lr * scale / bias1)));
            }
        });
    }

    /// Writes the moments and the step count as safetensors (`m.<name>`, `v.<name>`, `step`).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut named: Vec<(String, Tensor)> = vec![("step".into(), Tensor::from_slice(&[self.step]))];
        for (name, _, m, v) in &self.slots {
            named.push((format!("m.{name}"), m.to_device(tch::Device::Cpu)));
            named.push((format!("v.{name}"), v.to_device(tch::Device::Cpu)));
        }
        Tensor::write_safetensors(&named, path)?;
        Ok(())
    }

    /// Restores what [`Adam::save`] wrote; every moment must be present with the right shape.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let stored: std::collections::HashMap<String, Tensor> = Tensor::read_safetensors(path)?.into_iter().collect();
        let bad = |what: String| EmbedError::run(path, what);
        self.step = stored
            .get("step")
            .ok_or_else(|| bad("optimizer state has no 'step'".into()))?
            .to_kind(Kind::Int64)
            .int64_value(&[0]);
        for (name, p, m, v) in &mut self.slots {
            for (prefix, slot) in [("m", &mut *m), ("v", &mut *v)] {
                let key = format!("{prefix}.{name}");
                let t = stored.get(&key).ok_or_else(|| bad(format!("optimizer state has no '{key}'")))?;
                if t.size() != p.size() {
                    return Err(bad(format!("'{key}' has shape {:?}, the model has {:?}", t.size(), p.size())));
                }
                tch::no_grad(|| slot.copy_(t));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    /// Independent reference: the update rule of torch.optim.Adam written out in f64 beside the
    /// tensor implementation, on f(x) = (x − 3)² from x = 0 (step 1 moves by exactly lr).
    #[test]
    fn follows_the_adam_update_rule() {
        let vs = nn::VarStore::new(Device::Cpu);
        let x = vs.root().var("x", &[1], nn::Init::Const(0.0));
        let mut adam = Adam::new(&vs, 0.1);
        let (mut m, mut v, mut xr) = (0.0f64, 0.0f64, 0.0f64);
        for t in 1..=3 {
            adam.zero_grad();
            (&x - 3.0).square().sum(Kind::Float).backward();
            adam.step();
            let g = 2.0 * (xr - 3.0);
            m = 0.9 * m + 0.1 * g;
            v = 0.999 * v + 0.001 * g * g;
            let mh = m / (1.0 - 0.9f64.powi(t));
            let vh = v / (1.0 - 0.999f64.powi(t));
            xr -= 0.1 * mh / (vh.sqrt() + 1e-8);
            assert!((x.double_value(&[0]) - xr).abs() < 1e-6, "step {t}");
        }
        assert!((xr - 0.3).abs() < 1e-3);
    }

    #[test]
    fn a_scaled_variable_moves_scale_times_as_far() {
        // Adam's first step moves every parameter by exactly lr · sign(g).
        let vs = nn::VarStore::new(Device::Cpu);
        let x = vs.root().var("x", &[1], nn::Init::Const(0.0));
        let y = (vs.root() / "match").var("b", &[1], nn::Init::Const(0.0));
        let mut adam = Adam::new(&vs, 0.01);
        assert_eq!(adam.scale_learning_rate("match.", 30.0), 1);
        adam.zero_grad();
        ((&x - 1.0).square() + (&y - 1.0).square()).sum(Kind::Float).backward();
        adam.step();
        assert!((x.double_value(&[0]) - 0.01).abs() < 1e-6);
        assert!((y.double_value(&[0]) - 0.3).abs() < 1e-5);
    }

    /// Independent reference: torch.optim.AdamW's rule written out in f64 (decay the weight by
    /// 1 − lr·λ, then the Adam step), on f(x) = (x − 3)² from x = 1; a variable left out of the
    /// decay follows plain Adam's rule.
    #[test]
    fn decoupled_weight_decay_follows_the_adamw_rule() {
        let vs = nn::VarStore::new(Device::Cpu);
        let w = vs.root().var("weight", &[1], nn::Init::Const(1.0));
        let b = vs.root().var("bias", &[1], nn::Init::Const(1.0));
        let (lr, decay) = (0.1, 0.5);
        let mut adam = Adam::new(&vs, lr);
        assert_eq!(adam.set_weight_decay(decay, |name| name.ends_with("weight")), 1);
        // (value, first moment, second moment) of the weight and of the bias.
        let mut reference = [(1.0f64, 0.0f64, 0.0f64); 2];
        for t in 1..=3 {
            adam.zero_grad();
            ((&w - 3.0).square() + (&b - 3.0).square()).sum(Kind::Float).backward();
            adam.step();
            for (i, (x, m, v)) in reference.iter_mut().enumerate() {
                let g = 2.0 * (*x - 3.0);
                *m = 0.9 * *m + 0.1 * g;
                *v = 0.999 * *v + 0.001 * g * g;
                let mh = *m / (1.0 - 0.9f64.powi(t));
                let vh = *v / (1.0 - 0.999f64.powi(t));
                let kept = if i == 0 { 1.0 - lr * decay } else { 1.0 };
                *x = *x * kept - lr * mh / (vh.sqrt() + 1e-8);
            }
            assert!((w.double_value(&[0]) - reference[0].0).abs() < 1e-6, "weight, step {t}");
            assert!((b.double_value(&[0]) - reference[1].0).abs() < 1e-6, "bias, step {t}");
        }
        // The decay pulled the weight back toward 0 by more than a tenth over three steps.
        assert!(b.double_value(&[0]) - w.double_value(&[0]) > 0.1);
    }

    #[test]
    fn state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opt.safetensors");
        let vs = nn::VarStore::new(Device::Cpu);
        let x = vs.root().var("x", &[2], nn::Init::Const(1.0));
        let mut adam = Adam::new(&vs, 0.01);
        for _ in 0..2 {
            adam.zero_grad();
            x.square().sum(Kind::Float).backward();
            adam.step();
        }
        adam.save(&path).unwrap();
        let mut other = Adam::new(&vs, 0.01);
        other.load(&path).unwrap();
        assert_eq!(other.steps_taken(), 2);
        for (a, b) in adam.slots.iter().zip(&other.slots) {
            assert!(a.2.equal(&b.2) && a.3.equal(&b.3));
        }
    }
}
