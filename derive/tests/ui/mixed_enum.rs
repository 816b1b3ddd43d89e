#[derive(clientgo_derive::CrdSchema, serde::Serialize)]
enum Source {
    None,
    Url(String),
}

fn main() {}
