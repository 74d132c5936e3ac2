//! `hedge agnostic sweep` end to end on real Context-MNIST at a tiny scale: the artefacts, the
//! summary's documented shape, the measured correlations, and refused settings.

use std::process::Command;

#[test]
fn sweep_writes_the_audit_in_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("context");
    let o = Command::new(env!("CARGO_BIN_EXE_hedge"))
        .args(["agnostic", "sweep", "--alphas", "0,1", "--repeats", "1", "--steps", "150", "--rho", "0.95"])
        .args(["--target-train", "2000", "--context-train", "1000", "--test", "1000", "--probe-steps", "100"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["protected_chance"], 0.5);
    let a0 = &summary["alphas"]["0.0"];
    for test in ["iid", "balanced", "reversed"] {
        assert!(a0["target_accuracy"][test]["mean"].as_f64().is_some(), "{summary}");
        assert!(a0["target_accuracy"][test]["std"].as_f64().is_some());
    }
    for key in ["protected_head_accuracy", "flip_rate", "mask_share"] {
        assert!(a0[key]["mean"].as_f64().is_some(), "{key}: {summary}");
    }
    assert!(a0["probe_accuracy"]["linear"]["mean"].as_f64().is_some());
    assert!(a0["probe_accuracy"]["mlp"]["mean"].as_f64().is_some());
    // With ρ = 0.95 and no adversary the network leans on the background: the IID test is far
    // easier than the reversed one, and a fresh probe reads the background from the features.
    let iid = a0["target_accuracy"]["iid"]["mean"].as_f64().unwrap();
    let reversed = a0["target_accuracy"]["reversed"]["mean"].as_f64().unwrap();
    assert!(iid > reversed + 0.1, "IID {iid} vs reversed {reversed}");
    assert!(a0["probe_accuracy"]["mlp"]["mean"].as_f64().unwrap() > 0.8, "{summary}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    let agreement = config["measured_agreement"]["target_train"].as_f64().unwrap();
    assert!((agreement - 0.95).abs() < 0.015, "{agreement}");
    for png in ["accuracy_vs_alpha.png", "probe_vs_alpha.png"] {
        assert_eq!(&std::fs::read(out.join(png)).unwrap()[1..4], b"PNG");
    }
    assert_eq!(std::fs::read_to_string(out.join("metrics.jsonl")).unwrap().lines().count(), 2);
    // `report` rebuilds the same summary from metrics.jsonl.
    std::fs::remove_file(out.join("summary.json")).unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_hedge"))
        .args(["agnostic", "report", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rebuilt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(rebuilt["alphas"]["1.0"]["runs"], 1);
    let diff = rebuilt["alphas"]["0.0"]["flip_rate"]["mean"].as_f64().unwrap()
        - summary["alphas"]["0.0"]["flip_rate"]["mean"].as_f64().unwrap();
    assert!(diff.abs() < 1e-12);

    let e = Command::new(env!("CARGO_BIN_EXE_hedge"))
        .args(["agnostic", "sweep", "--alphas", "0:2:0.5", "--out", dir.path().join("bad").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("--alphas"), "{}", String::from_utf8_lossy(&e.stderr));
    assert!(!dir.path().join("bad").exists());
}
