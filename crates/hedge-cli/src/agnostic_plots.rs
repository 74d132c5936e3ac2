//! The activation-map grid of a Context-MNIST sweep (the paper's Fig. 4): the shown test images
//! in the top row, then one row per α with each image's strongest G_f response, upsampled.

use std::path::Path;

use anyhow::{anyhow, Result};
use hedge_data::{NpyArray, NpyData};
use plotters::prelude::*;
use tch::{Kind, Tensor};

use hedge_plot::render;

const CELL: u32 = 84;
const LABEL_WIDTH: u32 = 90;

fn floats(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).expect("float tensor")
}

/// A dark-to-bright heat colour for v ∈ [0, 1] (black → red → yellow → white).
fn heat(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    let channel = |start: f64| ((v * 3.0 - start).clamp(0.0, 1.0) * 255.0) as u8;
    RGBColor(channel(0.0), channel(1.0), channel(2.0))
}

/// Writes `activation_maps.npz` (`images` `[k, 3, 28, 28]` u8, `alphas` `[a]`, `maps`
/// `[a, k, 28, 28]` f32) and `activation_maps.png` in `out`.
///
/// # Shapes
/// `images`: `[k, 3, 28, 28]` in [−1, 1]; each map `[k, 28, 28]`.
pub fn write_activation_maps(out: &Path, images: &Tensor, maps: &[(f64, Tensor)]) -> Result<()> {
    let k = images.size()[0] as usize;
    let pixels: Vec<u8> = floats(images).iter().map(|&v| ((v + 1.0) * 127.5).round().clamp(0.0, 255.0) as u8).collect();
    let alphas: Vec<f64> = maps.iter().map(|(a, _)| *a).collect();
    let values: Vec<f32> = maps.iter().flat_map(|(_, m)| floats(m)).collect();
    hedge_data::write_npz(
        &out.join("activation_maps.npz"),
        &[
            ("images", NpyArray::new(vec![k, 3, 28, 28], NpyData::U8(pixels.clone()))),
            ("alphas", NpyArray::new(vec![alphas.len()], NpyData::F64(alphas.clone()))),
            ("maps", NpyArray::new(vec![alphas.len(), k, 28, 28], NpyData::F32(values.clone()))),
        ],
    )?;
    draw_grid(&out.join("activation_maps.png"), k, &pixels, &alphas, &values)
}

/// Redraws `activation_maps.png` from a sweep's `activation_maps.npz`; `Ok(false)` when the
/// directory has none.
pub fn redraw_activation_maps(out: &Path) -> Result<bool> {
    let path = out.join("activation_maps.npz");
    if !path.exists() {
        return Ok(false);
    }
    let arrays = hedge_data::read_npz(&path)?;
    let get = |name: &str| {
        arrays
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
            .ok_or_else(|| anyhow!("{}: no array '{name}' (expected images, alphas, maps)", path.display()))
    };
    let (images, alphas, maps) = (get("images")?, get("alphas")?, get("maps")?);
    let (NpyData::U8(pixels), NpyData::F64(alphas), NpyData::F32(values)) = (&images.data, &alphas.data, &maps.data)
    else {
        return Err(anyhow!("{}: expected u8 images, f64 alphas, f32 maps", path.display()));
    };
    let k = images.shape.first().copied().unwrap_or(0);
    if pixels.len() != k * 3 * 784 || values.len() != alphas.len() * k * 784 {
        return Err(anyhow!("{}: array sizes do not match {k} images of 3 × 28 × 28", path.display()));
    }
    draw_grid(&out.join("activation_maps.png"), k, pixels, alphas, values)?;
    Ok(true)
}

fn draw_grid(path: &Path, k: usize, pixels: &[u8], alphas: &[f64], values: &[f32]) -> Result<()> {
    let size = (LABEL_WIDTH + CELL * k as u32, CELL * (1 + alphas.len() as u32) + 30);
    render(path, size, |root| {
        let err = |e: String| anyhow!("activation-map grid: {e}");
        root.draw(&Text::new(
            "strongest G_f response, each map scaled from its own minimum (black) to maximum (white); top row: inputs",
            (5, 5),
            ("sans-serif", 16),
        ))
        .map_err(|e| err(e.to_string()))?;
        let top = 30;
        let scale = (CELL / 28) as i32;
        let cell = |row: u32, col: usize, colour: &dyn Fn(usize) -> RGBColor| -> Result<()> {
            let (x0, y0) = ((LABEL_WIDTH + CELL * col as u32) as i32, (top + CELL * row) as i32);
            for p in 0..784 {
                let (y, x) = ((p / 28) as i32, (p % 28) as i32);
                let c = colour(p);
                root.draw(&Rectangle::new(
                    [(x0 + x * scale, y0 + y * scale), (x0 + (x + 1) * scale, y0 + (y + 1) * scale)],
                    c.filled(),
                ))
                .map_err(|e| err(e.to_string()))?;
            }
            Ok(())
        };
        for i in 0..k {
            let image = &pixels[i * 3 * 784..(i + 1) * 3 * 784];
            cell(0, i, &|p| RGBColor(image[p], image[784 + p], image[2 * 784 + p]))?;
        }
        for (r, alpha) in alphas.iter().enumerate() {
            for i in 0..k {
                let map = &values[(r * k + i) * 784..(r * k + i + 1) * 784];
                let (lo, hi) = map.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                let range = (hi - lo).max(1e-12);
                cell(1 + r as u32, i, &|p| heat(f64::from((map[p] - lo) / range)))?;
            }
            let y = (top + CELL * (1 + r as u32) + CELL / 2) as i32;
            root.draw(&Text::new(format!("α = {alpha}"), (8, y), ("sans-serif", 16)))
                .map_err(|e| err(e.to_string()))?;
        }
        root.draw(&Text::new("input", (8, (top + CELL / 2) as i32), ("sans-serif", 16)))
            .map_err(|e| err(e.to_string()))?;
        Ok(())
    })
}
