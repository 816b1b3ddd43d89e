#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Spec {
    #[schema(minimun = 1)]
    size: u32,
}

#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
struct Other {
    #[schema(list_type = "bag")]
    items: Vec<String>,
}

fn main() {}
