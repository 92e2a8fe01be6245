//! The lenient literal reader: it agrees with serde_json on valid JSON and repairs only what has one
//! reading.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::super::literal::{read, read_all, Syntax};
use super::super::scan::Ctx;
use super::*;

fn json_text(text: &str) -> Result<(Value, String), bool> {
    let mut ctx = Ctx::new(&[], text.len());
    read_all(text, Syntax::JSON, &mut ctx)
        .map(|lit| (lit.value, lit.repairs.describe()))
        .map_err(|f| f.eof)
}

#[test]
fn repairs_with_one_reading_are_made_and_named() {
    assert_eq!(
        json_text("{'a': [1, 2,], \"b\": True, \"c\": \"C:\\path\",}"),
        Ok((
            json!({"a": [1, 2], "b": true, "c": "C:\\path"}),
            "single quotes, a trailing comma, Python constants, an invalid escape kept as text"
                .to_string()
        ))
    );
    assert_eq!(
        json_text("{\"content\": \"line one\nline two\"}"),
        Ok((
            json!({"content": "line one\nline two"}),
            "a raw control character in a string".to_string()
        ))
    );
}

#[test]
fn guesses_are_refused_and_a_cut_off_value_says_so() {
    assert_eq!(json_text("{\"a\": 1 \"b\": 2}"), Err(false));
    assert_eq!(json_text("{\"a\": unquoted}"), Err(false));
    assert_eq!(json_text("{\"a\": [1, 2"), Err(true));
    assert_eq!(json_text("{\"a\": \"open"), Err(true));
}

#[test]
fn escapes_decode_surrogate_pairs_and_keep_lone_surrogates_replaced() {
    assert_eq!(
        json_text(r#"["\ud83d\ude80", "\u00e9", "\ud800"]"#),
        Ok((json!(["🚀", "é", "\u{FFFD}"]), String::new()))
    );
}

#[test]
fn deep_nesting_fails_instead_of_exhausting_the_stack() {
    let deep = "[".repeat(100_000);
    assert_eq!(json_text(&deep), Err(false));
}

#[test]
fn python_literals_keep_apostrophes_and_read_triple_quotes() {
    let text = "['It's', '''a\n'b'\n''', None]";
    let mut ctx = Ctx::new(&[], text.len());
    let lit = read(text, 0, Syntax::PYTHON, &mut ctx).unwrap();
    assert_eq!(lit.value, json!(["It's", "a\n'b'\n", null]));
    assert_eq!(lit.end, text.len());
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1_000_000i64..1_000_000, 1u32..6)
            .prop_map(|(m, e)| json!(m as f64 / 10f64.powi(e as i32))),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Equal, with floats compared to a relative 1e-12 (serde_json's float parsing may differ by an ulp).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.fract() != 0.0 || y.fract() != 0.0 => {
                (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
            }
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_reader_agrees_with_serde_json_on_valid_json(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
        let expected: Value = serde_json::from_str(&text).unwrap();
        let (got, repairs) = json_text(&text).unwrap();
        prop_assert!(same(&got, &expected), "{got} != {expected}");
        prop_assert_eq!(repairs, "");
    }

    #[test]
    fn the_reader_never_panics_and_ends_inside_its_input(text in "\\PC{0,200}", start in 0usize..200) {
        let start = (0..=start.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        for syntax in [Syntax::JSON, Syntax::PYTHON, Syntax { python: false, bare_keys: true, delim: Some("<|\"|>") }] {
            let mut ctx = Ctx::new(&[], text.len());
            if let Ok(lit) = read(&text, start, syntax, &mut ctx) {
                prop_assert!(lit.end <= text.len() && lit.end > start);
            }
        }
    }
}
