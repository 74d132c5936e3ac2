#[cfg(test)]
mod tests {
    #[test]
    fn engine_smoke() {
        let t = tch::Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
        assert_eq!(t.sum(tch::Kind::Float).double_value(&[]), 6.0);
        println!("threads {}", tch::get_num_threads());
    }
}
