//! Which convolution settings train the HIB trunk fastest on this CPU: f32 vs bf16, NCHW vs
//! channels-last, "same" vs "valid" padding, and the cost of the VIB loss on top of the convs.
//! `cargo run --release -p hedge-embed --example speed_variants -- base convonly cl bf16 cl-bf16 valid valid-cl-bf16`
//! prints training images/s (batch 256, forward + backward + Adam) for each named variant.
use std::time::Instant;
use tch::{nn, nn::Module, Device, Kind, Tensor};

fn to_cl(t: &Tensor) -> Tensor {
    t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

fn main() {
    let variants = std::env::args().skip(1).collect::<Vec<_>>();
    for v in variants {
        let cl = v.contains("cl");
        let bf = v.contains("bf16");
        let pad = if v.contains("valid") { 0 } else { 2 };
        let lossless = v.contains("convonly");
        tch::manual_seed(0);
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let cfg = nn::ConvConfig { padding: pad, ..Default::default() };
        let c1 = nn::conv2d(&root / "c1", 1, 32, 5, cfg);
        let c2 = nn::conv2d(&root / "c2", 32, 64, 5, cfg);
        let feat = if pad == 2 { 64 * 7 * 14 } else { 64 * 4 * 11 };
        let head = nn::linear(&root / "h", feat, 4, Default::default());
        let tch_adam = v.contains("tchadam");
        let mut opt = hedge_embed::Adam::new(&vs, 1e-3);
        let mut topt = nn::OptimizerConfig::build(nn::Adam::default(), &vs, 1e-3).unwrap();
        let x = Tensor::rand([256, 1, 28, 56], (Kind::Float, Device::Cpu));
        let x = if cl { to_cl(&x) } else { x };
        let conv = |x: &Tensor, c: &nn::Conv2D| -> Tensor {
            if bf {
                let w = c.ws.to_kind(Kind::BFloat16);
                let w = if cl { to_cl(&w) } else { w };
                let b = c.bs.as_ref().map(|b| b.to_kind(Kind::BFloat16));
                x.to_kind(Kind::BFloat16).conv2d(&w, b.as_ref(), [1, 1], [pad, pad], [1, 1], 1)
            } else {
                let w = if cl { to_cl(&c.ws) } else { c.ws.shallow_clone() };
                x.conv2d(&w, c.bs.as_ref(), [1, 1], [pad, pad], [1, 1], 1)
            }
        };
        let mut step = || {
            let h = conv(&x, &c1).relu().max_pool2d_default(2);
            let h = conv(&h, &c2).relu().max_pool2d_default(2);
            let out = head.forward(&h.flatten(1, -1).to_kind(Kind::Float));
            let loss = if lossless {
                out.square().mean(Kind::Float)
            } else {
                let m = out.narrow(1, 0, 2).reshape([256, 1, 2]);
                let z = m + Tensor::randn([256, 8, 2], (Kind::Float, Device::Cpu))
                    * out.narrow(1, 2, 2).softplus().sqrt().reshape([256, 1, 2]);
                let d = (z.narrow(0, 0, 128).unsqueeze(2) - z.narrow(0, 128, 128).unsqueeze(1))
                    .square()
                    .sum_dim_intlist([3i64].as_slice(), false, Kind::Float)
                    .sqrt();
                (-d).log_sigmoid().logsumexp([1i64, 2].as_slice(), false).mean(Kind::Float)
            };
            if tch_adam {
                topt.zero_grad();
                loss.backward();
                topt.step();
            } else {
                opt.zero_grad();
                loss.backward();
                opt.step();
            }
            loss.double_value(&[])
        };
        for _ in 0..5 {
            step();
        }
        let t = Instant::now();
        let n = 30;
        for _ in 0..n {
            step();
        }
        println!("{v}: {:.0} img/s", 256.0 * n as f64 / t.elapsed().as_secs_f64());
    }
}
