type Extra = std::collections::HashMap<String, i32>;

#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Counts {
    name: String,
    #[serde(flatten)]
    rest: Extra,
}

fn main() {}
