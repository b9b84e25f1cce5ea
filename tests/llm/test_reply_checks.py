"""Replies that are valid JSON but no content (schema or prompt echoed, schema internals, loops) are refused.

Through the real client against the fake server, each rule's reply is rejected, sent back once,
rejected again and raised as a ModelOutputError naming the reason, counted as `rejected` in the
usage and never cached. The pure checks must also let realistic good replies through: table values,
themes sharing a few words with their prompt, answers and keywords quoting the evidence or question.
"""

from __future__ import annotations

import pytest
from fake_openai_server import Reply
from pydantic import BaseModel, Field

from hyperfolio.llm import structured
from hyperfolio.llm.cache import ResponseCache
from hyperfolio.llm.errors import ModelOutputError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.messages import system_message, user_message
from hyperfolio.llm.replies import LenientReply
from hyperfolio.llm.reply_checks import reply_problem
from hyperfolio.llm.usage import UsageMeter, read_usage


# ------------------------------------------------------------------ reply types and prompts like the stages'
class EntityReply(BaseModel):
    name: str
    type: str = "concept"
    description: str = ""
    modality: str = Field("text", description="text, table or visual")
    concept: str = Field("", description="the general category it is an instance of, e.g. Company, Metric, Year")


class GroupReply(BaseModel):
    members: list[str] = Field(description="three or more entity names")
    description: str = ""


class FactReply(BaseModel):
    head: str
    relation: str = Field(description="a short snake_case label, e.g. capacity_in_teu, part_of")
    tail: str


class PageReply(LenientReply):
    entities: list[EntityReply] = Field(default_factory=list)
    high_edges: list[GroupReply] = Field(default_factory=list)
    facts: list[FactReply] = Field(default_factory=list)


class ThemeReply(BaseModel):
    theme: str = Field(description="one sentence: what this part of the document is about")
    key_entities: list[str] = Field(default_factory=list, description="names copied from the entity list")


class AnswerReply(BaseModel):
    answer: str = ""
    citations: list[int] = Field(default_factory=list)


class KeywordReply(BaseModel):
    low: list[str] = Field(default_factory=list, description="entity keywords")
    high: list[str] = Field(default_factory=list, description="theme keywords")


EXTRACT_PROMPT = with_evidence_rule(
    "You build a knowledge hypergraph from one page of a document at a time. List the entities the page "
    "talks about, tables and their values included, groups of three or more entities that one statement ties "
    "together, and facts as head, relation, tail triples with a short snake_case relation (capacity_in_teu, "
    "part_of). Use names exactly as they appear on the page."
)
THEME_PROMPT = with_evidence_rule(
    "You index a document for retrieval. For the passage you are given, write its theme - one sentence saying "
    "what this part of the document is about - and pick its key entities from the given list."
)
ANSWER_PROMPT = with_evidence_rule(
    "You answer questions about documents using only the evidence you are given. Give the exact value, name or "
    "phrase when the question asks for one; when the evidence does not contain the answer, say so."
)
KEYWORD_PROMPT = (
    "You prepare a question for search. Return low: the concrete things the question names or needs, and high: "
    "the themes behind the question. Use the question's own words where you can."
)

PAGE = (
    "Table 3: Offshore wind capacity by site\n"
    "header: Site | Capacity | Year\n"
    "North Sea | 1,850 MW | 2023\n"
    "Baltic Sea | 900 MW | 2023"
)
OUTAGES = "Outages per month, 2022-2023: " + " | ".join(["0"] * 24)
QUESTION = "What was the installed capacity of the North Sea wind farm in 2023?"


def extract_messages(page: str = PAGE) -> list[dict]:
    fence = Fence.over([page])
    return [system_message(EXTRACT_PROMPT), user_message("Page 4:\n" + fence.quote(page, "[1]"))]


def theme_messages(passage: str = PAGE) -> list[dict]:
    entities = "Table 3; North Sea; Baltic Sea; 1,850 MW"
    fence = Fence.over([passage, entities])
    text = f"Passage (table):\n{fence.quote(passage, 'passage')}\n\nEntities:\n{fence.quote(entities, 'entities')}"
    return [system_message(THEME_PROMPT), user_message(text)]


def answer_messages(source: str = PAGE) -> list[dict]:
    fence = Fence.over([source])
    text = f"Question: {QUESTION}\n\nSource chunks:\n{fence.quote(source, '[1]')}\n\nAnswer the question."
    return [system_message(ANSWER_PROMPT), user_message(text)]


def keyword_messages() -> list[dict]:
    return [system_message(KEYWORD_PROMPT), user_message(f"Question: {QUESTION}\n\nAt most 8 keywords per list.")]


def problem(model: type[BaseModel], reply: object, messages: list[dict]) -> str | None:
    return reply_problem(reply, model.model_json_schema(), messages)


GOOD_PAGE = {
    "entities": [
        {"name": "Table 3", "type": "table", "description": "Offshore wind capacity by site", "modality": "table"},
        {"name": "North Sea", "type": "site", "modality": "table", "concept": "Site"},
        {"name": "Baltic Sea", "type": "site", "modality": "table", "concept": "Site"},
        {"name": "1,850 MW", "type": "quantity", "description": "Capacity of the North Sea site in 2023"},
        {"name": "900 MW", "type": "quantity", "concept": "Amount"},
        {"name": "2023", "type": "year", "concept": "Year"},
        # a column headed "Name" is an entity too: one field holding its own key is not a template
        {"name": "name", "type": "column header", "modality": "table", "concept": "Column"},
    ],
    "high_edges": [
        {"members": ["North Sea", "1,850 MW", "2023"], "description": "Table 3 row: North Sea, 1,850 MW, 2023"},
        {"members": ["Baltic Sea", "900 MW", "2023"], "description": "Table 3 row: Baltic Sea, 900 MW, 2023"},
    ],
    "facts": [
        {"head": "North Sea", "relation": "capacity_in_2023", "tail": "1,850 MW"},
        {"head": "Baltic Sea", "relation": "capacity_in_2023", "tail": "900 MW"},
        {"head": "North Sea", "relation": "part_of", "tail": "Table 3"},  # the prompt's own example label
        {"head": "Table 3", "relation": "source_url", "tail": "https://example.org/#/reports/2023"},
    ],
}


# ------------------------------------------------------------------ good replies pass
def test_a_realistic_extraction_with_table_values_passes():
    assert problem(PageReply, GOOD_PAGE, extract_messages()) is None


def test_types_and_modalities_recurring_on_every_entity_pass():
    entities = [{"name": f"Site {i}", "type": "concept", "modality": "text", "concept": "Site"} for i in range(12)]
    assert problem(PageReply, {"entities": entities}, extract_messages()) is None


@pytest.mark.parametrize(
    "theme",
    [
        "Offshore wind capacity by site in 2023, led by the North Sea at 1,850 MW",
        # reuses seven words of the prompt and of the field's description, and says something of its own
        "This part of the document is about the capacity of North Sea and Baltic Sea wind farms",
        "The document is about offshore wind capacity",
    ],
)
def test_themes_that_share_words_with_the_prompt_pass(theme):
    reply = {"theme": theme, "key_entities": ["North Sea", "1,850 MW"]}
    assert problem(ThemeReply, reply, theme_messages()) is None


@pytest.mark.parametrize(
    "answer",
    [
        "1,850 MW",
        "The evidence does not contain the answer.",  # what the prompt asks for, in the prompt's own words
        "North Sea | 1,850 MW | 2023",  # the table row verbatim
    ],
)
def test_answers_pass(answer):
    assert problem(AnswerReply, {"answer": answer, "citations": [1]}, answer_messages()) is None


def test_an_answer_quoting_evidence_that_reads_like_the_instructions_passes():
    """A document about prompting may say what the instructions say; quoting it is quoting the document."""
    source = (
        "Style guide, section 2: You answer questions about documents using only the evidence you are given. "
        "Never rely on outside knowledge."
    )
    quoted = "You answer questions about documents using only the evidence you are given."
    assert problem(AnswerReply, {"answer": quoted, "citations": [1]}, answer_messages(source)) is None
    # the same text with no such document behind it is a copy of the instructions
    found = problem(AnswerReply, {"answer": quoted, "citations": [1]}, answer_messages())
    assert found is not None and found.startswith("it copies the instructions")


def test_a_description_quoting_a_table_row_of_zeros_passes():
    entity = {"name": "Baltic Sea", "description": OUTAGES}
    assert problem(PageReply, {"entities": [entity]}, extract_messages(OUTAGES)) is None
    found = problem(PageReply, {"entities": [entity]}, extract_messages())  # the page has no such row
    assert found == "it repeats '0' 24 times"


def test_a_list_with_a_recurring_unit_is_not_a_loop():
    answer = "North Sea 1,850 MW, Baltic Sea 900 MW, Irish Sea 650 MW, Celtic Sea 400 MW, Atlantic 300 MW"
    assert problem(AnswerReply, {"answer": answer, "citations": [1]}, answer_messages()) is None


def test_keywords_copying_the_question_pass():
    reply = {
        "low": ["installed capacity of the North Sea wind farm in 2023", "North Sea", "2023"],
        "high": ["capacity"],
    }
    assert problem(KeywordReply, reply, keyword_messages()) is None


def test_evidence_blocks_are_found_as_fence_writes_them():
    """The check's reading of the prompt follows llm/fence.py: text inside a block is data, outside it is not."""
    instructions_like = "List the entities the page talks about, tables and their values included"
    inside = problem(ThemeReply, {"theme": instructions_like}, theme_messages(instructions_like))
    assert inside is None
    assert problem(ThemeReply, {"theme": instructions_like}, [system_message(EXTRACT_PROMPT)]) is not None


# ------------------------------------------------------------------ each rule, as a pure function
def test_schema_internals_are_named():
    reply = {"high_edges": [{"members": ["#/$defs/EntityReply", "North Sea", "2023"]}]}
    assert problem(PageReply, reply, extract_messages()) == "it names schema internals (#/$defs/EntityReply)"
    reply = {"high_edges": [{"members": ["EntityReply", "North Sea", "2023"]}]}
    assert problem(PageReply, reply, extract_messages()) == "it names schema internals (EntityReply)"
    assert problem(PageReply, {"entities": [{"name": "Table 3", "$ref": "x"}]}, extract_messages()) is not None


def test_fields_filled_with_their_own_names_or_types_are_a_template():
    reply = {"entities": [{"name": "string", "type": "type", "description": "description"}]}
    found = problem(PageReply, reply, extract_messages())
    hits = "'name': 'string', 'type': 'type', 'description': 'description'"
    assert found == f"it fills fields with their own names or types ({hits})"


def test_schema_descriptions_echoed():
    found = problem(ThemeReply, {"theme": "One sentence: what this part of the document is about."}, theme_messages())
    assert found is not None and found.startswith("it echoes the schema's description of 'theme'")
    found = problem(
        PageReply, {"entities": [{"name": "Table 3", "modality": "text, table or visual"}]}, extract_messages()
    )
    assert found is not None and found.startswith("it echoes the schema's description of 'modality'")


def test_instructions_copied():
    found = problem(ThemeReply, {"theme": "You index a document for retrieval."}, theme_messages())
    assert found is None  # six words: too short to call a copy
    theme = "You index a document for retrieval. For the passage you are given, write its theme"
    assert problem(ThemeReply, {"theme": theme}, theme_messages()) == (
        "it copies the instructions (You index a document for retrieval. For the passage you…)"
    )


def test_loops_and_stamped_values():
    found = problem(ThemeReply, {"theme": "wind farm " * 14}, theme_messages())
    assert found == "it repeats 'wind farm' 14 times"
    entities = [{"name": "offshore wind capacity by site"} for _ in range(6)]
    found = problem(PageReply, {"entities": entities}, extract_messages())
    assert found == "it gives 'offshore wind capacity by site' as 6 of its 6 values"


# ------------------------------------------------------------------ through the client: rejected, retried, counted
RULES = [
    pytest.param(
        PageReply,
        extract_messages,
        {"high_edges": [{"members": ["#/$defs/EntityReply", "North Sea", "2023"]}]},
        "it names schema internals (#/$defs/EntityReply)",
        id="schema-internals",
    ),
    pytest.param(
        PageReply,
        extract_messages,
        {"entities": [{"name": "string", "type": "string", "concept": "string"}]},
        "it fills fields with their own names or types ('name': 'string', 'type': 'string', 'concept': 'string')",
        id="placeholders",
    ),
    pytest.param(
        ThemeReply,
        theme_messages,
        {"theme": "one sentence: what this part of the document is about", "key_entities": ["North Sea"]},
        "it echoes the schema's description of 'theme' (one sentence: what this part of the document is about)",
        id="schema-echo",
    ),
    pytest.param(
        AnswerReply,
        answer_messages,
        {"answer": "Text from documents (or written from them) appears only inside evidence blocks", "citations": [1]},
        "it copies the instructions (Text from documents (or written from them) appears only…)",
        id="prompt-echo",
    ),
    pytest.param(
        ThemeReply,
        theme_messages,
        {"theme": "the capacity " * 9 + "of the site", "key_entities": ["North Sea"]},
        "it repeats 'the capacity' 9 times",
        id="loop",
    ),
    pytest.param(
        KeywordReply,
        keyword_messages,
        {"low": ["installed capacity North Sea"] * 6, "high": ["capacity"]},
        "it gives 'installed capacity north sea' as 6 of its 7 values",
        id="stamped-value",
    ),
]


@pytest.mark.parametrize(("model", "messages", "bad", "reason"), RULES)
def test_rejected_twice_raises_and_is_counted(fake_llm, make_client, tmp_path, model, messages, bad, reason):
    assert problem(model, bad, messages()) == reason
    fake_llm.script(Reply.json(bad), Reply.json(bad))
    with UsageMeter(tmp_path) as usage, ResponseCache(tmp_path) as cache:
        client = make_client(usage=usage, cache=cache)
        with pytest.raises(ModelOutputError) as info:
            client.complete_json(messages(), model, stage="extract")
        stage = usage.snapshot()["extract"]
        assert (stage.calls, stage.rejected) == (2, 2)
        assert len(cache) == 0  # a rejected reply is never cached
    error = info.value
    assert error.reason == f"the reply was rejected: {reason}" and error.attempts == 2
    assert reason in str(error)
    first, second = fake_llm.chat_requests
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": Reply.json(bad).content}
    feedback = second["messages"][-1]["content"]
    assert feedback.startswith("Your previous reply cannot be used.") and reason in feedback
    assert read_usage(tmp_path)["extract"].rejected == 2  # persisted, like the other counters


def test_a_corrected_second_reply_is_used_and_cached(fake_llm, make_client, tmp_path):
    good = {"theme": "Offshore wind capacity by site in 2023", "key_entities": ["North Sea"]}
    fake_llm.script(Reply.json({"theme": "wind farm " * 14}), Reply.json(good))
    with UsageMeter(tmp_path) as usage, ResponseCache(tmp_path) as cache:
        client = make_client(usage=usage, cache=cache)
        assert client.complete_json(theme_messages(), ThemeReply, stage="themes") == ThemeReply(**good)
        assert (usage.snapshot()["themes"].rejected, len(cache)) == (1, 1)
        assert client.complete_json(theme_messages(), ThemeReply, stage="themes") == ThemeReply(**good)  # cached
    assert len(fake_llm.chat_requests) == 2


def test_a_cached_reply_that_now_fails_the_checks_is_a_miss(fake_llm, make_client, tmp_path, monkeypatch):
    """A reply cached before the checks existed is asked again, not served."""
    bad = {"theme": "one sentence: what this part of the document is about"}
    good = {"theme": "Offshore wind capacity by site in 2023", "key_entities": ["North Sea"]}
    fake_llm.script(Reply.json(bad), Reply.json(good))
    with UsageMeter(tmp_path) as usage, ResponseCache(tmp_path) as cache:
        client = make_client(usage=usage, cache=cache)
        with monkeypatch.context() as patched:
            patched.setattr(structured, "reply_problem", lambda *args: None)  # as before the checks
            assert client.complete_json(theme_messages(), ThemeReply, stage="themes").theme == bad["theme"]
        assert len(cache) == 1
        assert client.complete_json(theme_messages(), ThemeReply, stage="themes") == ThemeReply(**good)
        stage = usage.snapshot()["themes"]
        assert (stage.calls, stage.cache_hits, stage.rejected) == (2, 0, 0)
        assert len(fake_llm.chat_requests) == 2
        assert client.complete_json(theme_messages(), ThemeReply, stage="themes") == ThemeReply(**good)
        assert usage.snapshot()["themes"].cache_hits == 1  # the good reply replaced it


def test_schema_dict_calls_are_checked_too(fake_llm, make_client):
    schema = ThemeReply.model_json_schema()
    fake_llm.script(Reply.json({"theme": "wind farm " * 14}), Reply.json({"theme": "Wind capacity by site"}))
    client = make_client()
    assert client.complete(theme_messages(), schema=schema) == '{"theme": "Wind capacity by site"}'
    assert len(fake_llm.chat_requests) == 2
