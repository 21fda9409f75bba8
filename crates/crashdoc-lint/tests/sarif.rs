//! The SARIF output validates against the official SARIF 2.1.0 JSON schema
//! (testdata/sarif-schema-2.1.0.json, vendored from OASIS; see testdata/README.md).

use crashdoc_lint::checks::ALL;
use crashdoc_lint::{input::Input, lint, output};

fn schema() -> jsonschema::Validator {
    let text = include_str!("../testdata/sarif-schema-2.1.0.json");
    let v: serde_json::Value = serde_json::from_str(text).expect("the vendored schema is JSON");
    jsonschema::validator_for(&v).expect("the vendored schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &serde_json::Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

#[test]
fn sarif_of_every_example_validates() {
    let v = schema();
    let mut input = Input::default();
    for c in ALL {
        input
            .read_bytes(&format!("fixtures/{}.yaml", c.id), c.example.as_bytes())
            .unwrap();
    }
    let r = lint(&input, &Default::default());
    assert!(r.findings.len() > 20, "{} findings", r.findings.len());
    let doc = output::sarif(&r, env!("CARGO_PKG_VERSION"));
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{errs:#?}");
    // Each result points at a rule of the driver.
    let rules = doc["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for res in doc["runs"][0]["results"].as_array().unwrap() {
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], res["ruleId"]);
    }
}

#[test]
fn sarif_of_a_clean_run_validates() {
    let mut input = Input::default();
    input
        .read_bytes(
            "clean.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )
        .unwrap();
    let r = lint(&input, &Default::default());
    assert!(r.findings.is_empty());
    assert!(errors(&schema(), &output::sarif(&r, "0.1.0")).is_empty());
}

#[test]
fn the_schema_rejects_a_broken_log() {
    // The validation is real: a log without `version`, and a result with a
    // level SARIF does not define, are refused.
    let v = schema();
    let mut input = Input::default();
    input
        .read_bytes("a.yaml", ALL[0].example.as_bytes())
        .unwrap();
    let mut doc = output::sarif(&lint(&input, &Default::default()), "0.1.0");
    doc["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!errors(&v, &doc).is_empty());
    doc.as_object_mut().unwrap().remove("version");
    assert!(!errors(&v, &doc).is_empty());
}
