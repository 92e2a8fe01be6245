//! The `<testsuite>`/`<testcase>` tree of a JUnit XML file, shared by the pytest and node readers.
//!
//! Both runners write the same elements but mean different things by them (pytest's `classname` is a
//! dotted module path, node's suites are `describe` blocks), so this module only reads the tree and each
//! runner turns it into ids.

use super::TestStatus;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

pub(super) enum Node {
    Suite { name: String, children: Vec<Node> },
    Case(Case),
}

pub(super) struct Case {
    pub name: String,
    pub classname: String,
    pub file: Option<String>,
    pub time: Option<f64>,
    pub status: TestStatus,
    pub message_attr: Option<String>,
    pub body: String,
    pub skip_message: Option<String>,
}

fn attr(e: &BytesStart, key: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == key)
        .map(|a| {
            a.unescape_value()
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(&a.value).into_owned())
        })
}

fn new_case(e: &BytesStart) -> Case {
    Case {
        name: attr(e, b"name").unwrap_or_default(),
        classname: attr(e, b"classname").unwrap_or_default(),
        file: attr(e, b"file").filter(|f| !f.is_empty()),
        time: attr(e, b"time").and_then(|t| t.trim().parse().ok()),
        status: TestStatus::Pass,
        message_attr: None,
        body: String::new(),
        skip_message: None,
    }
}

/// Applies a `<failure>`, `<error>` or `<skipped>` child; true when its text is worth keeping.
fn mark(case: &mut Case, e: &BytesStart) -> bool {
    match e.local_name().as_ref() {
        b"failure" | b"error" => {
            case.status = TestStatus::Fail;
            if let Some(m) = attr(e, b"message").filter(|m| !m.trim().is_empty()) {
                match &mut case.message_attr {
                    Some(existing) => {
                        existing.push('\n');
                        existing.push_str(&m);
                    }
                    None => case.message_attr = Some(m),
                }
            }
            if !case.body.is_empty() {
                case.body.push('\n');
            }
            true
        }
        b"skipped" => {
            if case.status != TestStatus::Fail {
                case.status = TestStatus::Skip;
            }
            case.skip_message = attr(e, b"message");
            false
        }
        _ => false,
    }
}

fn push(stack: &mut [(String, Vec<Node>)], top: &mut Vec<Node>, node: Node) {
    match stack.last_mut() {
        Some((_, children)) => children.push(node),
        None => top.push(node),
    }
}

/// The `<testsuite>`/`<testcase>` tree, in document order. Stops at the first XML error and keeps
/// what was read (a cut-off test case is kept only when it had already failed).
pub(super) fn read(xml: &str) -> Vec<Node> {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<(String, Vec<Node>)> = Vec::new();
    let mut top: Vec<Node> = Vec::new();
    let mut case: Option<Case> = None;
    let mut in_text = false;
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"testsuite" => stack.push((attr(&e, b"name").unwrap_or_default(), Vec::new())),
                b"testcase" => case = Some(new_case(&e)),
                _ => {
                    if let Some(c) = case.as_mut() {
                        in_text = mark(c, &e);
                    }
                }
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                b"testsuite" => {
                    let name = attr(&e, b"name").unwrap_or_default();
                    push(
                        &mut stack,
                        &mut top,
                        Node::Suite {
                            name,
                            children: Vec::new(),
                        },
                    );
                }
                b"testcase" => push(&mut stack, &mut top, Node::Case(new_case(&e))),
                _ => {
                    if let Some(c) = case.as_mut() {
                        mark(c, &e);
                    }
                }
            },
            Event::Text(t) => {
                if let (true, Some(c)) = (in_text, case.as_mut()) {
                    match t.unescape() {
                        Ok(text) => c.body.push_str(&text),
                        Err(_) => c.body.push_str(&String::from_utf8_lossy(&t)),
                    }
                }
            }
            Event::CData(t) => {
                if let (true, Some(c)) = (in_text, case.as_mut()) {
                    c.body.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                b"testcase" => {
                    in_text = false;
                    if let Some(c) = case.take() {
                        push(&mut stack, &mut top, Node::Case(c));
                    }
                }
                b"testsuite" => {
                    if let Some((name, children)) = stack.pop() {
                        push(&mut stack, &mut top, Node::Suite { name, children });
                    }
                }
                _ => in_text = false,
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(c) = case.take().filter(|c| c.status == TestStatus::Fail) {
        push(&mut stack, &mut top, Node::Case(c));
    }
    while let Some((name, children)) = stack.pop() {
        push(&mut stack, &mut top, Node::Suite { name, children });
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree as text: `suite{..}` for suites, `name:status:message:body` for cases.
    fn shape(nodes: &[Node]) -> Vec<String> {
        nodes
            .iter()
            .map(|node| match node {
                Node::Suite { name, children } => {
                    format!("{name}{{{}}}", shape(children).join(" "))
                }
                Node::Case(c) => format!(
                    "{}:{:?}:{}:{}",
                    c.name,
                    c.status,
                    c.message_attr.as_deref().unwrap_or("-"),
                    c.body.trim()
                ),
            })
            .collect()
    }

    #[test]
    fn suites_nest_in_document_order_and_a_cut_off_file_keeps_the_failure_it_was_reading() {
        let xml = "<testsuites><testsuite name='outer'><testcase name='a' classname='c' time='0.5'/>\
                   <testsuite name='inner'><testcase name='b'><failure message='boom'>trace</failure>\
                   </testcase><testcase name='s'><skipped message='later'/></testcase></testsuite>\
                   </testsuite><testsuite name='cut'><testcase name='c'><failure message='late'>part";
        let tree = read(xml);
        assert_eq!(
            shape(&tree),
            vec![
                "outer{a:Pass:-: inner{b:Fail:boom:trace s:Skip:-:}}".to_string(),
                "cut{c:Fail:late:part}".to_string(),
            ]
        );
        let Some(Node::Suite { children, .. }) = tree.first() else {
            panic!("no outer suite");
        };
        let Some(Node::Case(a)) = children.first() else {
            panic!("no first case");
        };
        assert_eq!(
            (a.classname.as_str(), a.time, a.file.as_deref()),
            ("c", Some(0.5), None)
        );
    }
}
