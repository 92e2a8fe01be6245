use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

#[test]
fn a_new_file_is_created_with_its_parent_directories() {
    let f = fixture(&[]);
    assert_eq!(
        f.ok(
            "write_file",
            json!({"path": "src/deep/new.rs", "content": "a\nb\n"})
        ),
        "Created src/deep/new.rs: 4 bytes, 2 lines."
    );
    assert_eq!(f.read("src/deep/new.rs"), "a\nb\n");
}

#[test]
fn an_existing_file_is_replaced() {
    let f = fixture(&[("a.txt", "old\ncontent\n")]);
    assert_eq!(
        f.ok("write_file", json!({"path": "a.txt", "content": "x\n"})),
        "Replaced a.txt: 2 bytes, 1 line."
    );
    assert_eq!(f.read("a.txt"), "x\n");
}

#[test]
fn replacing_a_crlf_file_keeps_crlf() {
    let f = fixture(&[("w.txt", "a\r\nb\r\n")]);
    assert_eq!(
        f.ok("write_file", json!({"path": "w.txt", "content": "c\nd\n"})),
        "Replaced w.txt: 6 bytes, 2 lines, CRLF line endings kept."
    );
    assert_eq!(f.read("w.txt"), "c\r\nd\r\n");
}

#[test]
fn a_directory_or_the_root_cannot_be_written() {
    let f = fixture(&[("src/a.rs", "")]);
    assert_eq!(
        f.err("write_file", json!({"path": "src", "content": "x"})),
        "`src` is a directory; give the path of a file inside it."
    );
    assert_eq!(
        f.err("write_file", json!({"path": ".", "content": "x"})),
        "write_file needs the path of a file, such as `src/new.rs`."
    );
}
