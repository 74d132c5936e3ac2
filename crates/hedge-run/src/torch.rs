//! The libtorch helpers every pillar shares (feature `torch`): the process's one random
//! generator taken and seeded, and devices by name.
//!
//! libtorch has one random generator per process. A fit seeds it and draws from it (weights,
//! minibatches, posterior samples, reparameterisation noise); two threads doing that at once
//! would interleave their draws and neither result would depend on its seed alone. Every draw
//! in hedge happens while holding [`crate::lock_generator`], so results stay a function of their
//! seeds under concurrent use (tests run in parallel threads, and so may a user's).

use crate::{lock_generator, GeneratorGuard, RunError};

/// Takes the process's tensor generator and seeds it: draws made while the guard lives depend
/// on `seed` alone, whatever other threads do.
pub fn seeded_generator(seed: i64) -> GeneratorGuard {
    let guard = lock_generator();
    tch::manual_seed(seed);
    guard
}

/// Parses `cpu`, `cuda`, `cuda:N` or `auto` (CUDA when available, else CPU); a CUDA device
/// libtorch does not see is refused with the count it sees.
pub fn parse_device(name: &str) -> Result<tch::Device, RunError> {
    let cuda = |n: usize| {
        let seen = if tch::Cuda::is_available() { tch::Cuda::device_count() as usize } else { 0 };
        if n < seen {
            Ok(tch::Device::Cuda(n))
        } else {
            Err(RunError::InvalidConfig {
                field: "device",
                value: format!("cuda:{n}"),
                reason: format!(
                    "libtorch sees {seen} CUDA device(s); use cpu, or install the CUDA build with HEDGE_CUDA=1 \
                     scripts/setup-libtorch.sh"
                ),
            })
        }
    };
    match name {
        "cpu" => Ok(tch::Device::Cpu),
        "auto" => Ok(tch::Device::cuda_if_available()),
        "cuda" => cuda(0),
        other => match other.strip_prefix("cuda:").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => cuda(n),
            None => Err(RunError::InvalidConfig {
                field: "device",
                value: format!("'{other}'"),
                reason: "use cpu, cuda, cuda:N or auto".into(),
            }),
        },
    }
}

/// A short description of a device for logs and configs (`cpu`, `cuda:0`).
pub fn device_name(device: tch::Device) -> String {
    match device {
        tch::Device::Cpu => "cpu".into(),
        tch::Device::Cuda(n) => format!("cuda:{n}"),
        other => format!("{other:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_by_name_and_a_seeded_generator_repeats_its_draws() {
        assert_eq!(parse_device("cpu").unwrap(), tch::Device::Cpu);
        assert_eq!(device_name(tch::Device::Cuda(1)), "cuda:1");
        let err = parse_device("gpu").unwrap_err().to_string();
        assert!(err.contains("'device'") && err.contains("use cpu, cuda, cuda:N or auto"), "{err}");
        let draw = |seed| {
            let _generator = seeded_generator(seed);
            f64::try_from(tch::Tensor::randn([1], (tch::Kind::Double, tch::Device::Cpu))).unwrap()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }
}
