use faer::Mat;
use hedge_bayes::linalg::{self, Cholesky};
use std::time::Instant;
fn main() {
    let (n, m, d) = (41157, 256, 9);
    let x = Mat::from_fn(n, d, |i, j| ((i * 7 + j * 13) as f64 * 0.001).sin());
    let z = Mat::from_fn(m, d, |i, j| ((i * 3 + j * 5) as f64 * 0.01).cos());
    let k = hedge_bayes::RbfKernel::new(1.0, vec![1.0; d]);
    let t = Instant::now();
    let u = k.cross(z.as_ref(), x.as_ref());
    println!("cross {:?}", t.elapsed());
    let mut kuu = k.gram(z.as_ref());
    for i in 0..m {
        kuu[(i, i)] += 1e-6;
    }
    let l = Cholesky::new(kuu.as_ref(), "kuu").unwrap();
    let t = Instant::now();
    let v = l.solve_l(u.as_ref());
    println!("solve_l {:?}", t.elapsed());
    let t = Instant::now();
    let _bt = linalg::symmetric_product(v.as_ref(), v.as_ref());
    println!("syrk {:?}", t.elapsed());
    let t = Instant::now();
    let _bt = &v * v.transpose();
    println!("gemm vvT {:?}", t.elapsed());
    let t = Instant::now();
    let _p = l.solve_lt(v.as_ref());
    println!("solve_lt {:?}", t.elapsed());
    let g = Mat::from_fn(m, m, |i, j| ((i + j) as f64).sin());
    let t = Instant::now();
    let _gu = &g * &u;
    println!("gemm G U {:?}", t.elapsed());
    let t = Instant::now();
    let _q = linalg::column_dots(v.as_ref(), v.as_ref());
    println!("column_dots {:?}", t.elapsed());
    let t = Instant::now();
    let _c = v.clone();
    println!("clone {:?}", t.elapsed());
    let t = Instant::now();
    let _b = k.backward_weighted(z.as_ref(), x.as_ref(), &u);
    println!("backward {:?}", t.elapsed());
}
