//! An exponential moving average of a model's variables (Polyak averaging), kept in a second
//! variable store of the same network so that the averaged model can be evaluated, saved and
//! loaded like any other.

use tch::nn;

use crate::Result;

/// Shadow variables `s ← d·s + (1 − d)·θ` after every optimiser step, with the warm-up
/// `d_t = min(d, (1 + t)/(10 + t))` so that the first steps do not leave the average stuck near
/// the random initialisation. Buffers without gradients (batch-norm running statistics) are
/// averaged the same way.
pub struct Ema {
    decay: f64,
    updates: i64,
}

impl Ema {
    /// `decay` in (0, 1).
    pub fn new(decay: f64) -> Self {
        Ema { decay, updates: 0 }
    }

    /// The decay used by the next update.
    pub fn current_decay(&self) -> f64 {
        let t = self.updates as f64;
        self.decay.min((1.0 + t) / (10.0 + t))
    }

    /// Moves every variable of `shadow` towards the same-named variable of `live`.
    ///
    /// # Panics
    /// If the two stores do not hold the same variable names (they are built from one config).
    pub fn update(&mut self, shadow: &nn::VarStore, live: &nn::VarStore) {
        let d = self.current_decay();
        let live_vars = live.variables();
        tch::no_grad(|| {
            for (name, mut s) in shadow.variables() {
                let l = live_vars.get(&name).unwrap_or_else(|| panic!("EMA: live model has no '{name}'"));
                if s.is_floating_point() {
                    let _ = s.g_mul_scalar_(d).g_add_(&(l * (1.0 - d)));
                } else {
                    s.copy_(l);
                }
            }
        });
        self.updates += 1;
    }

    /// Number of updates so far (saved with the optimiser state so a resumed run continues the
    /// same warm-up).
    pub fn updates(&self) -> i64 {
        self.updates
    }

    pub fn set_updates(&mut self, updates: i64) {
        self.updates = updates;
    }

    /// Makes `shadow` an exact copy of `live` (at the start of training).
    pub fn reset(shadow: &mut nn::VarStore, live: &nn::VarStore) -> Result<()> {
        shadow.copy(live)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    /// The average after n updates of a constant target follows the closed form
    /// s_n = θ + (s_0 − θ)·Π d_t.
    #[test]
    fn average_follows_the_closed_form() {
        let live = nn::VarStore::new(Device::Cpu);
        let shadow = nn::VarStore::new(Device::Cpu);
        let x = live.root().var("x", &[1], nn::Init::Const(2.0));
        let s = shadow.root().var("x", &[1], nn::Init::Const(0.0));
        let mut ema = Ema::new(0.9);
        let mut prod = 1.0f64;
        for t in 0..30 {
            let d = 0.9f64.min((1.0 + t as f64) / (10.0 + t as f64));
            assert!((ema.current_decay() - d).abs() < 1e-15);
            prod *= d;
            ema.update(&shadow, &live);
        }
        let want = 2.0 + (0.0 - 2.0) * prod;
        assert!((s.double_value(&[0]) - want).abs() < 1e-5, "{} vs {want}", s.double_value(&[0]));
        assert_eq!(x.kind(), Kind::Float);
    }
}
