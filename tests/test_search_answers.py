"""Reading search engines' answers and writing their requests (annotations/formats/search_answers),
pinned on the answers of real Elasticsearch, OpenSearch and Solr servers."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jmespath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotations.formats import search_answers as sa

FIXTURES = Path(__file__).parent / "fixtures" / "search_answers"


def _answer(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_an_elasticsearch_answer_gives_ids_scores_and_the_source_fields_named() -> None:
    mapping = sa.mapping_for(
        sa.ELASTICSEARCH,
        {"title": "_source.user.id", "snippet": "highlight.message", "url": "_source.http.version"},
    )
    hits = sa.parse_answer(_answer("elasticsearch-8-search.json"), mapping, depth=10)
    assert [(hit.docno, hit.score) for hit in hits] == [("0", 1.3862942), ("7", 0.9808292)]
    assert hits[0].title == "kimchy"
    assert hits[0].snippet == "GET /<em>search</em> HTTP/1.1 200 1070000"
    assert hits[1].url == "1.1"


def test_the_depth_keeps_only_the_first_hits() -> None:
    mapping = sa.mapping_for(sa.ELASTICSEARCH, {})
    hits = sa.parse_answer(_answer("elasticsearch-8-search.json"), mapping, depth=1)
    assert [hit.docno for hit in hits] == ["0"]
    assert hits[0].title == ""  # the preset's _source.title is absent here: no text


def test_an_elasticsearch_answer_sorted_by_a_field_keeps_the_engines_order() -> None:
    hits = sa.parse_answer(
        _answer("elasticsearch-8-sorted.json"),
        sa.mapping_for(sa.ELASTICSEARCH, {"snippet": "_source.message"}),
        depth=10,
    )
    # _score is null for every hit: the order becomes descending scores 2, 1.
    assert [(hit.docno, hit.score) for hit in hits] == [("kimchy-2", 2.0), ("kimchy-1", 1.0)]
    assert hits[0].snippet == "trying out Elasticsearch"


def test_an_opensearch_answer_reads_like_elasticsearchs() -> None:
    mapping = sa.mapping_for(
        sa.OPENSEARCH, {"title": "_source.play_name", "snippet": "_source.text_entry"}
    )
    hits = sa.parse_answer(_answer("opensearch-2-search.json"), mapping, depth=100)
    assert [hit.docno for hit in hits] == ["34229", "1356", "26908"]
    assert [hit.score for hit in hits] == [12.575322, 9.032426, 8.104544]
    assert (hits[0].title, hits[0].snippet) == (
        "Hamlet", "To reason most absurd, whose common theme"
    )  # fmt: skip


def test_a_solr_answer_joins_multi_valued_fields() -> None:
    mapping = sa.mapping_for(sa.SOLR, {"title": "name", "snippet": "genre"})
    hits = sa.parse_answer(_answer("solr-9-select.json"), mapping, depth=10)
    assert [hit.docno for hit in hits] == [
        "/en/harry_potter_and_the_goblet_of_fire_2005",
        "/en/the_lord_of_the_rings_the_two_towers_2002",
        "/en/pans_labyrinth",
    ]
    assert [hit.score for hit in hits] == [2.0862942, 2.0862942, 1.7330917]
    assert hits[2].snippet == "Fantasy … Drama … War film"


def test_a_solr_answer_without_scores_ranks_in_the_engines_order() -> None:
    mapping = sa.mapping_for(sa.SOLR, {"title": "name", "snippet": "features"})
    hits = sa.parse_answer(_answer("solr-9-select-no-score.json"), mapping, depth=10)
    assert [(hit.docno, hit.score) for hit in hits] == [("MA147LL/A", 2.0), ("VS1GB400C3", 1.0)]
    assert hits[1].snippet == ""


def test_any_json_through_jmespath() -> None:
    body = json.dumps(
        {"data": {"results": [
            {"doc": {"key": 17}, "relevance": 0.5, "meta": {"heading": "Seventeen"}},
            {"doc": {"key": "x-2"}, "relevance": 0.25, "meta": {"heading": None}},
            {"doc": {"key": 17}, "relevance": 0.1, "meta": {}},
        ]}}
    )  # fmt: skip
    mapping = sa.mapping_for(
        sa.JMESPATH,
        {"hits": "data.results", "id": "doc.key", "score": "relevance", "title": "meta.heading"},
    )
    hits = sa.parse_answer(body, mapping, depth=10)
    # A number id becomes its text; a document seen twice keeps its first place.
    assert [(hit.docno, hit.score, hit.title) for hit in hits] == [
        ("17", 0.5, "Seventeen"), ("x-2", 0.25, "")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        (b"<html>busy</html>", "", "the answer is not JSON (line 1 column 1)"),
        (b'{"hits": {"total": 0}}', "hits.hits", "not found in the answer"),
        (b'{"hits": {"hits": {"a": 1}}}', "hits.hits", "the hits are an object, not a list"),
        (b'{"hits": {"hits": [{"_score": 1}]}}', "hits.hits[0]._id", "the document id is null"),
        (
            b'{"hits": {"hits": [{"_id": "a b", "_score": 1}]}}',
            "hits.hits[0]._id",
            "not a usable document id",
        ),
        (
            b'{"hits": {"hits": [{"_id": "a", "_score": "high"}]}}',
            "hits.hits[0]._score",
            "the score is a string, not a number",
        ),
        (
            b'{"hits": {"hits": [{"_id": "a", "_score": 2}, {"_id": "b", "_score": null}]}}',
            "hits.hits[1]._score",
            "no score for this hit while others have one",
        ),
        (
            b'{"hits": {"hits": [{"_id": "a", "_score": 2, "_source": {"title": {"x": 1}}}]}}',
            "hits.hits[0]._source.title",
            "the text is an object",
        ),
    ],
)
def test_an_answer_that_cannot_be_read_names_the_path_that_failed(
    body: bytes, path: str, message: str
) -> None:
    with pytest.raises(sa.AnswerProblem) as caught:
        sa.parse_answer(body, sa.mapping_for(sa.ELASTICSEARCH, {}), depth=10)
    assert caught.value.path == path
    assert message in caught.value.message
    assert "busy" not in str(caught.value)  # never the answer's content


def test_mapping_problems_name_the_field() -> None:
    assert sa.mapping_problems(sa.mapping_for(sa.SOLR, {})) == {}
    problems = sa.mapping_problems(sa.mapping_for(sa.JMESPATH, {"hits": "data[", "id": ""}))
    assert set(problems) == {"hits", "id"}
    assert problems["hits"].startswith("Not a JMESPath expression")


def test_a_url_gets_the_query_percent_encoded_whole() -> None:
    template = "http://127.0.0.1:8983/solr/films/select?q={{title}}&rows={{depth}}&wt=json"
    assert sa.url_problem(template) is None
    url = sa.render_url(template, {"title": "cats & dogs#1 /x?rows=9", "depth": 5, "qid": "q"})
    query = parse_qs(urlsplit(url).query)
    assert query["q"] == ["cats & dogs#1 /x?rows=9"]
    assert query["rows"] == ["5"]
    assert urlsplit(url).netloc == "127.0.0.1:8983"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("http://{{title}}.example.org/_search", "not in the host"),
        ("ftp://example.org/{{title}}", "http://"),
        ("http://example.org/_search?q={{query}}", "is not a placeholder"),
    ],
)
def test_a_url_template_is_refused_where_a_query_could_choose_the_host(
    template: str, problem: str
) -> None:
    assert problem in (sa.url_problem(template) or "")


def test_a_json_body_gets_the_query_escaped_and_the_depth_as_a_number() -> None:
    template = (
        '{"size": "{{depth}}", "query": {"multi_match": {"query": "{{title}} {{description}}",'
        ' "fields": ["title^2", "text"]}}}'
    )
    assert sa.body_problem(template) is None
    title = 'he said "stop"}, "size": 10000, "x": {"'
    body = json.loads(
        sa.render_body(template, {"title": title, "description": "\\ é\n", "depth": 50, "qid": "1"})
    )
    assert body["size"] == 50
    assert body["query"]["multi_match"]["query"] == title + " \\ é\n"
    assert body["query"]["multi_match"]["fields"] == ["title^2", "text"]


def test_a_body_template_must_be_json_with_known_placeholders() -> None:
    assert "Not JSON" in (sa.body_problem('{"query": {{title}}}') or "")
    assert "is not a placeholder" in (sa.body_problem('{"q": "{{narrative}}"}') or "")
    assert sa.body_problem("") is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "_c"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    value=_JSON,
    names=st.lists(st.sampled_from(["a", "b", "_c"]), min_size=1, max_size=3),
)
def test_an_expression_of_field_names_reads_what_jmespath_reads(
    value: object, names: list[str]
) -> None:
    """Field paths (the presets') are read by dictionary lookups, not by JMESPath: the
    same value for any JSON."""
    expression = ".".join(names)
    assert sa._getter(expression)(value) == jmespath.search(expression, value)
