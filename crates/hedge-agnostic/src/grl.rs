//! The gradient reversal layer (Ganin & Lempitsky 2015): identity in the forward pass, gradient
//! multiplied by −λ in the backward pass.

use tch::Tensor;

/// y = x forward; ∂L/∂x = −λ ∂L/∂y backward.
///
/// Written as (1 + λ)·stop_gradient(x) − λ·x: the value is x (up to rounding), and only the
/// second term carries a gradient.
///
/// # Shapes
/// Any shape; the output has the input's.
pub fn reverse_gradient(x: &Tensor, lambda: f64) -> Tensor {
    (x * (1.0 + lambda)).detach() - x * lambda
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    /// Forward equals x; the gradient equals −λ times the upstream gradient, for several λ and
    /// a non-trivial upstream gradient (L = Σ w ⊙ y, so ∂L/∂y = w).
    #[test]
    fn forward_is_identity_and_gradient_is_reversed() {
        // Draws hold the process's generator, as every seeded computation in this binary does.
        let _generator = crate::seeded_generator(0);
        for lambda in [0.0, 0.3, 1.0, 2.5] {
            let x = Tensor::randn([4, 3], (Kind::Double, Device::Cpu)).set_requires_grad(true);
            let w = Tensor::randn([4, 3], (Kind::Double, Device::Cpu));
            let y = reverse_gradient(&x, lambda);
            let forward_error = (&y - &x).abs().max().double_value(&[]);
            assert!(forward_error < 1e-12, "λ = {lambda}: forward error {forward_error}");
            (&y * &w).sum(Kind::Double).backward();
            let grad = x.grad();
            let expected = &w * -lambda;
            let grad_error = (grad - expected).abs().max().double_value(&[]);
            assert!(grad_error < 1e-12, "λ = {lambda}: gradient error {grad_error}");
        }
    }
}
