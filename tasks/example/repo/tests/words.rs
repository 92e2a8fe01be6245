use textstats::word_count;

#[test]
fn counts_words_separated_by_spaces() {
    assert_eq!(word_count("the quick brown fox"), 4);
}
