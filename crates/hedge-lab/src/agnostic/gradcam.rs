//! Where G_y's decision looks: class activation maps (Grad-CAM, Selvaraju et al. 2017) of the
//! saved networks of finished Context-MNIST sweeps, beside the strongest-response maps the sweep
//! audit draws.
//!
//! The strongest-response map shows what G_f's last convolution responds to, whatever G_y does
//! with it; a removal that acts after the convolutions (a dense bottleneck, an eraser) cannot
//! move it. Grad-CAM weighs each channel of those maps by how much the predicted class's score
//! depends on it, so it moves when the classifier stops using the background, which is the
//! claim of the agnostic-networks paper's Figs. 3–4.

use std::path::{Path, PathBuf};

use hedge_data::{NpyArray, NpyData};
use hedge_run::{write_atomic, RunDirectory};
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use crate::agnostic::pareto::method_label;
use crate::agnostic::sweep::{alpha_key, PreparedData, SweepConfig, SweepDataset, CHECKPOINTS_DIR, CONFIG_FILE};
use crate::error::{invalid, LabError, Result};
use hedge_agnostic::audit::{activation_maps, mask_share_of};
use hedge_agnostic::erasure::Removal;
use hedge_agnostic::model::AgnosticNet;

/// Grad-CAM of G_y's predicted class: per image, ReLU(Σ_c w_c·A_c) with A the last convolution's
/// rectified maps and w_c the mean over positions of ∂s/∂A_c, s = the predicted class's logit
/// minus the mean logit; upsampled bilinearly to 28 × 28. `None` for networks without maps.
///
/// # Shapes
/// `x`: `[n, 3, 28, 28]` → `[n, 28, 28]` (≥ 0).
pub fn class_activation_maps(net: &AgnosticNet, x: &Tensor) -> Option<Tensor> {
    let parts: Option<Vec<Tensor>> = x
        .split(500, 0)
        .iter()
        .map(|batch| {
            let maps = net.feature_maps(batch)?.detach().set_requires_grad(true);
            let logits = net.target_logits(&net.features_from_maps(&maps));
            let predicted = logits.argmax(1, true);
            let score = logits.gather(1, &predicted, false).squeeze_dim(1) - logits.mean_dim(1, false, Kind::Float);
            let grads = Tensor::run_backward(&[score.sum(Kind::Float)], &[&maps], false, false).remove(0);
            let weights = grads.mean_dim([2, 3].as_slice(), true, Kind::Float);
            let cam = tch::no_grad(|| (weights * &maps).sum_dim_intlist([1].as_slice(), true, Kind::Float).relu());
            Some(cam.upsample_bilinear2d([28, 28], false, None, None).squeeze_dim(1))
        })
        .collect();
    parts.map(|p| Tensor::cat(&p, 0))
}

/// One saved network's two map shares on the balanced test set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapShares {
    pub sweep: String,
    pub method: String,
    pub alpha: f64,
    /// The sweep audit's mask share (strongest G_f response).
    pub activation_mask_share: f64,
    /// The same share of the Grad-CAM maps of G_y's decision.
    pub gradcam_mask_share: f64,
}

/// `maps.json`: every adversarially trained sweep's repeat-0 networks, and the sweeps left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapsSummary {
    /// The share a uniform map would have: the digit masks' mean area fraction (what a map that
    /// ignores where the digit is scores).
    pub uniform_mask_share: f64,
    pub networks: Vec<MapShares>,
    /// Sweeps without maps to compute, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// For each Context-MNIST sweep: loads repeat 0's saved network at every α, computes both mask
/// shares on the balanced test set and draws the Grad-CAM grid of the sweep's shown images
/// (`gradcam-<sweep folder>.png`, maps in `gradcam-<sweep folder>.npz`); writes `maps.json` and
/// `maps.md` into `out`. Post-hoc erasure sweeps are listed as skipped: their G_y reads erased
/// features, and the eraser is not saved with the network.
pub fn class_activation_report(
    sweeps: &[PathBuf],
    root: &hedge_data::DataRoot,
    out: &Path,
    overwrite: bool,
) -> Result<MapsSummary> {
    if sweeps.is_empty() {
        return Err(invalid("sweeps", "none", "give at least one sweep folder"));
    }
    hedge_run::atomic::prepare_report_files(out, &["maps.json", "maps.md"], overwrite)?;
    let mut summary = MapsSummary { uniform_mask_share: f64::NAN, networks: Vec::new(), skipped: Vec::new() };
    for sweep in sweeps {
        let dir = RunDirectory::open(sweep)?;
        let config: SweepConfig = dir.read_json(CONFIG_FILE)?;
        let name = sweep.file_name().map_or_else(|| sweep.display().to_string(), |n| n.to_string_lossy().into_owned());
        if config.dataset != SweepDataset::ContextMnist {
            return Err(invalid("sweeps", sweep.display(), "maps need Context-MNIST sweeps (images with digit masks)"));
        }
        if config.removal != Removal::Adversary {
            summary
                .skipped
                .push((name, format!("{}: G_y reads erased features; the eraser is not saved", config.removal.name())));
            continue;
        }
        let prepared = PreparedData::rebuild(&config, root)?;
        let (PreparedData::Context(data), Some(shown)) = (&prepared, prepared.shown_images()) else {
            unreachable!("a Context-MNIST sweep rebuilds Context-MNIST data")
        };
        let test = &data.test_balanced;
        summary.uniform_mask_share = mask_share_of(&Tensor::ones_like(&test.mask).to_kind(Kind::Float), &test.mask);
        let (mut alphas, mut grid) = (Vec::new(), Vec::new());
        for &alpha in &config.alphas {
            let stem = format!("alpha-{}", alpha_key(alpha));
            let checkpoints = dir.file(CHECKPOINTS_DIR);
            if !checkpoints.join(format!("{stem}-extractor.safetensors")).is_file() {
                continue;
            }
            let net = AgnosticNet::load(config.model, &checkpoints, &stem)?;
            let strongest = activation_maps(&net, &test.x).expect("a Context-MNIST network has maps");
            let cam = class_activation_maps(&net, &test.x).expect("a Context-MNIST network has maps");
            summary.networks.push(MapShares {
                sweep: name.clone(),
                method: method_label(&config),
                alpha,
                activation_mask_share: mask_share_of(&strongest, &test.mask),
                gradcam_mask_share: mask_share_of(&cam, &test.mask),
            });
            alphas.push(alpha);
            grid.extend(
                Vec::<f32>::try_from(class_activation_maps(&net, &shown).expect("maps").flatten(0, -1))
                    .unwrap_or_default(),
            );
        }
        if alphas.is_empty() {
            summary.skipped.push((name, "no saved network (checkpoints/ is not committed; rerun the sweep)".into()));
            continue;
        }
        let k = shown.size()[0] as usize;
        let pixels: Vec<u8> = Vec::<f32>::try_from(shown.flatten(0, -1))
            .unwrap_or_default()
            .iter()
            .map(|&v| ((v + 1.0) * 127.5).round().clamp(0.0, 255.0) as u8)
            .collect();
        let arrays = [
            ("images", NpyArray::new(vec![k, 3, 28, 28], NpyData::U8(pixels.clone()))),
            ("alphas", NpyArray::new(vec![alphas.len()], NpyData::F64(alphas.clone()))),
            ("maps", NpyArray::new(vec![alphas.len(), k, 28, 28], NpyData::F32(grid.clone()))),
        ];
        let npz = out.join(format!("gradcam-{name}.npz"));
        let tmp = out.join(format!(".gradcam-{name}.partial.npz"));
        hedge_data::write_npz(&tmp, &arrays)?;
        std::fs::rename(&tmp, &npz)
            .map_err(|e| LabError::Write { path: npz.display().to_string(), what: e.to_string() })?;
        hedge_plot::activation_grid(
            &out.join(format!("gradcam-{name}.png")),
            "Grad-CAM of G_y's predicted class",
            k,
            &pixels,
            &alphas,
            &grid,
        )?;
    }
    let json = serde_json::to_vec_pretty(&summary).expect("a summary serialises");
    write_atomic(&out.join("maps.json"), &json)?;
    write_atomic(&out.join("maps.md"), markdown(&summary).as_bytes())?;
    Ok(summary)
}

fn markdown(summary: &MapsSummary) -> String {
    let mut md = String::from(
        "Mask share on the balanced test set (share of a map's mass inside the dilated digit; repeat 0 of each sweep): \
         the strongest G_f response (the sweep audit's) and Grad-CAM of G_y's predicted class.\n\n",
    );
    md.push_str(&format!(
        "A uniform map scores {:.3} (the masks' mean area): shares near it do not single out the digit.\n\n\
         | sweep | method | α | strongest response | Grad-CAM |\n|---|---|---|---|---|\n",
        summary.uniform_mask_share
    ));
    for n in &summary.networks {
        md.push_str(&format!(
            "| {} | {} | {} | {:.3} | {:.3} |\n",
            n.sweep, n.method, n.alpha, n.activation_mask_share, n.gradcam_mask_share
        ));
    }
    if !summary.skipped.is_empty() {
        md.push_str("\nSkipped:\n\n");
        for (sweep, why) in &summary.skipped {
            md.push_str(&format!("- {sweep}: {why}\n"));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use hedge_agnostic::model::ModelConfig;
    use tch::Device;

    /// Grad-CAM's channel weight w_c is the mean over the 8 × 8 positions of ∂s/∂A_c, so 64·w_c
    /// is the derivative of the score when the whole channel c is shifted by ε: checked against
    /// a central finite difference (the score's class held at the one predicted unshifted).
    #[test]
    fn channel_weights_are_the_score_derivative_of_a_channel_shift() {
        let _generator = hedge_agnostic::seeded_generator(5);
        let net = AgnosticNet::new(ModelConfig::default().with_bottleneck(Some(16))).unwrap();
        let x = Tensor::rand([1, 3, 28, 28], (Kind::Float, Device::Cpu)) * 2.0 - 1.0;
        let maps = net.feature_maps(&x).unwrap().detach().to_kind(Kind::Double);
        let predicted = net.target_logits(&net.features_from_maps(&maps.to_kind(Kind::Float))).argmax(1, true);
        let score = |m: &Tensor| {
            let logits = net.target_logits(&net.features_from_maps(&m.to_kind(Kind::Float))).to_kind(Kind::Double);
            (logits.gather(1, &predicted, false).squeeze_dim(1) - logits.mean_dim(1, false, Kind::Double))
                .double_value(&[0])
        };
        let m = maps.to_kind(Kind::Float).set_requires_grad(true);
        let logits = net.target_logits(&net.features_from_maps(&m));
        let s = logits.gather(1, &predicted, false).squeeze_dim(1) - logits.mean_dim(1, false, Kind::Float);
        let grads = Tensor::run_backward(&[s.sum(Kind::Float)], &[&m], false, false).remove(0);
        let weights: Vec<f32> =
            Vec::try_from(grads.mean_dim([2, 3].as_slice(), false, Kind::Float).flatten(0, -1)).unwrap();
        let eps = 1e-3;
        let mut checked = 0;
        for c in 0..48i64 {
            let shift = Tensor::zeros([1, 48, 8, 8], (Kind::Double, Device::Cpu));
            let _ = shift.narrow(1, c, 1).fill_(eps);
            let fd = (score(&(&maps + &shift)) - score(&(&maps - &shift))) / (2.0 * eps);
            assert!(
                (fd - 64.0 * f64::from(weights[c as usize])).abs() < 2e-3,
                "channel {c}: {fd} vs {}",
                64.0 * weights[c as usize]
            );
            checked += usize::from(fd.abs() > 1e-4);
        }
        assert!(checked > 5, "too few channels with a measurable effect: {checked}");
        let cam = class_activation_maps(&net, &x).unwrap();
        assert_eq!(cam.size(), [1, 28, 28]);
        assert!(cam.min().double_value(&[]) >= 0.0);
    }

    /// A saved network loads back to the same function, and a checkpoint for another shape is
    /// refused with its path.
    #[test]
    fn a_saved_network_loads_back_identically() {
        let _generator = hedge_agnostic::seeded_generator(2);
        let config = ModelConfig::default().with_bottleneck(Some(8));
        let net = AgnosticNet::new(config).unwrap();
        let dir = std::env::temp_dir().join(format!("hedge-gradcam-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        net.save(&dir, "alpha-0.5").unwrap();
        let back = AgnosticNet::load(config, &dir, "alpha-0.5").unwrap();
        let x = Tensor::rand([4, 3, 28, 28], (Kind::Float, Device::Cpu));
        let (a, b) = (net.target_logits(&net.features(&x)), back.target_logits(&back.features(&x)));
        assert_eq!(Vec::<f32>::try_from(a.flatten(0, -1)).unwrap(), Vec::<f32>::try_from(b.flatten(0, -1)).unwrap());
        let err = AgnosticNet::load(ModelConfig::default(), &dir, "alpha-0.5").err().expect("a shape mismatch");
        assert!(err.to_string().contains("alpha-0.5-"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
