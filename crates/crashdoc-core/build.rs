//! The catalog's YAML files (`catalog/*.yaml`) are what people edit; the
//! binary embeds them as JSON, converted here at build time, because
//! parsing 1 MB of YAML at every start-up costs more than the analysis of a
//! small input. A file that is not valid YAML fails the build, naming it.
//! The typed checks (fields, causes, regexes, test lines) stay in the
//! catalog's tests, which read the same JSON.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=catalog");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("catalog");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/catalog");
    let mut names: Vec<PathBuf> = std::fs::read_dir("catalog")
        .expect("read catalog/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    names.sort();
    for path in names {
        println!("cargo:rerun-if-changed={}", path.display());
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let value: serde_json::Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", path.display()));
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name");
        let json = serde_json::to_string(&value).expect("a YAML value is JSON");
        std::fs::write(out.join(format!("{stem}.json")), json).expect("write the catalog's JSON");
    }
}
