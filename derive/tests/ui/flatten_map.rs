use std::collections::BTreeMap;

#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Labels {
    name: String,
    #[serde(flatten)]
    rest: BTreeMap<String, String>,
}

fn main() {}
