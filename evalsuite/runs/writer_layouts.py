"""Where each published result writer keeps the prediction, the raw generation, the gold answers and its own scores.

One table, keyed by stable names, instead of a reader per pipeline: every FlashRAG pipeline (read from
`RUC-NLPIR/FlashRAG` `flashrag/pipeline/*.py`), the Search-R1 family's result writers (R1-Searcher, ReSearch,
ZeroSearch, StepSearch, AutoRefine, Search-R1 reproductions), and a layout built from `--fields` for anything else.
Each entry's `writer` cites the file, commit, function and lines that fill the record it reads (lines counted on the
text the index holds at that commit).

A layout is recognised by the output keys its writer stores: the one whose required keys a record has and whose
known keys account for all of them (the most specific wins). FlashRAG's `Evaluator` evaluates `output.pred`, so that
is the prediction; the raw generation, where a writer keeps one apart from the prompt, is the response whose turns
are parsed. A field that holds only the prompt is never read as a response (issue #27: a sequential pipeline's
chat prompt ends at the assistant header, and reading "the text after it" gave an empty answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any

from evalsuite.errors import DataError, EvalsuiteError, unknown_name
from evalsuite.protocol.passages import split_contents
from evalsuite.runs.schema import Passage

# Keys FlashRAG's `Evaluator.evaluate` adds to every item whatever the pipeline (`Item.update_evaluation_score`).
_EVALUATOR_KEYS = frozenset({"metric_score"})
# A judge's verdict added to a writer's record afterwards (R1-Searcher's metric_calc_gpt_as_judge.py adds
# `gpt4o_output`, AutoRefine's cmd/llm_judge.py `llm_score`): any writer's record may carry one, so such a key never
# makes a known layout unrecognisable; each is listed as a judgment we do not recompute (evalsuite.runs.recorded).
JUDGMENT_KEY = re.compile(r".*(judge|gpt).*|llm_score", re.IGNORECASE)


def is_judgment_key(key: str) -> bool:
    return JUDGMENT_KEY.fullmatch(key) is not None


MISSING = object()  # what `lookup` returns for a path a record does not have (None is a value)


@dataclass(frozen=True)
class FieldMap:
    """Dotted paths into one result record. `prediction` is what the writer scored; `response` the raw generation
    (None: the writer keeps none apart from its prompt); `scores` the per-item scores it recorded."""

    prediction: str | None = "output.pred"
    response: str | None = None  # `a|b`: the first present
    golds: str = "golden_answers"
    id: str | None = "id"  # `#`: the item's position names it (`idx|#`: idx where present)
    question: str | None = "question"
    scores: str | None = "output.metric_score"
    prompt: str | None = None


@dataclass(frozen=True)
class ResultLayout:
    """One writer's result record: where its fields are, the keys that identify it, and how to read its response."""

    name: str
    writer: str  # repository, file and function the layout was read from
    fields: FieldMap
    required: frozenset[str] = frozenset()  # keys (under `container`) every record of this writer has
    allowed: frozenset[str] = frozenset()  # further keys it may store
    patterns: tuple[str, ...] = ()  # regular expressions for numbered keys (`pred_iter_0`, ...)
    container: str | None = "output"  # where the keys above live (None: top level)
    save_notes: tuple[str, ...] = ()  # FlashRAG `examples/methods/run_exp.py` save_note values that ran it
    method: str | None = None  # protocol of the response, for `Method.parse` (None: the --method / task default)
    # (marker, method): a response holding the marker follows that method's protocol (FlashRAG's ReasoningPipeline
    # runs R1-Searcher's tags, its SearchR1Pipeline subclass Search-R1's, with the same output keys).
    method_markers: tuple[tuple[str, str], ...] = ()
    question_pattern: str | None = None  # where a writer keeps no question: read it from the response (group 1)
    recorded: tuple[
        str, ...
    ] = ()  # patterns of further keys (under `container`) holding the writer's own per-item scores
    response_in_prompt: bool = False  # FlashRAG reasoning pipelines append the generation to `output.prompt`
    # The response follows a search protocol whose turns `Method.parse` reads. The other FlashRAG pipelines' generations
    # are plain text (an answer, a Self-Ask chain, IRCoT thoughts): kept as the trajectory, never parsed into turns
    # a search protocol would count as invalid actions.
    parse_turns: bool = False
    parse_prediction: bool = False  # the prediction is the answer parsed from the response (no `pred` to take)
    check: Callable[[Mapping[str, Any]], bool] | None = field(
        default=None, compare=False
    )  # tells apart same-key writers
    # The writer's own reading, where it differs from ours (each cites the writer's function):
    # the generation, from a record whose response field holds more than it (ZeroSearch: prompt + response);
    read_response: Callable[[Mapping[str, Any]], str | None] | None = field(default=None, compare=False)
    # the answer it scored, from the record (ZeroSearch reads the last <answer> of prompt + response, if two or more);
    predict: Callable[[Mapping[str, Any]], str | None] | None = field(default=None, compare=False)
    # the answer the writer's own extraction rule gives from the trajectory the record holds, where the record keeps
    # both a prediction and the trajectory it came from (None: the record holds no trajectory to check it against):
    # that answer is scored and the recorded prediction checked against it (R1-Searcher's eval script);
    trajectory_answer: Callable[[Mapping[str, Any]], str | None] | None = field(default=None, compare=False)
    # why a writer may record an empty prediction whatever its trajectory holds (None: it never does)
    empty_prediction: str | None = None
    # (open tag, close tag, split) per observation block kind: the passages as the writer laid them out, where the
    # method's own parser does not split them (R1-Searcher's eval script, ReSearch, StepSearch).
    passages: tuple[tuple[str, str, Callable[[str], list[Passage]]], ...] = field(default=(), compare=False)

    def looks_for(self) -> str:
        """The keys that identify this writer, as dotted paths (`output.pred, output.raw_pred`)."""
        prefix = f"{self.container}." if self.container else ""
        return ", ".join(prefix + key for key in sorted(self.required))

    def accounts_for(self, keys: set[str]) -> bool:
        return not self.extra_keys(keys)

    def extra_keys(self, keys: set[str]) -> list[str]:
        """The keys this writer does not store (a judge's verdict is never one: any record may carry it)."""
        known = self.required | self.allowed | _EVALUATOR_KEYS
        return sorted(
            key
            for key in keys
            if key not in known and not is_judgment_key(key) and not any(re.fullmatch(p, key) for p in self.patterns)
        )

    def part_of(self, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The mapping this writer's keys live in (the record, or its `container`)."""
        part = record.get(self.container) if self.container else record
        return part if isinstance(part, Mapping) else None

    def matches(self, record: Mapping[str, Any], extra_allowed: bool = False) -> bool:
        """Whether `record` has this writer's shape; `extra_allowed`: keys it does not store may sit beside its own."""
        part = self.part_of(record)
        if part is None or not self.required <= set(part):
            return False
        if not extra_allowed and not self.accounts_for(set(part)):
            return False
        return self.check is None or self.check(part)


_FLASHRAG = "RUC-NLPIR/FlashRAG"
_SEQUENTIAL_KEYS = frozenset({"prompt", "retrieval_result", "refine_result", "rewrite_query", "raw_pred"})


def _flashrag(
    name: str,
    writer: str,
    *,
    required: set[str],
    allowed: AbstractSet[str] = frozenset(),
    patterns: tuple[str, ...] = (),
    save_notes: tuple[str, ...] = (),
    response: str | None = None,
    **options: Any,
) -> ResultLayout:
    """A FlashRAG pipeline: `output.pred` evaluated, `output.metric_score` recorded, keys under `output`."""
    return ResultLayout(
        name,
        f"{_FLASHRAG} {writer}",
        FieldMap(response=response),
        frozenset(required | {"pred"}),
        frozenset(allowed),
        patterns,
        save_notes=save_notes,
        **options,
    )


def _judge_is(kind: type) -> Callable[[Mapping[str, Any]], bool]:
    # ConditionalPipeline records a bool per item, AdaptivePipeline a classifier letter ("A", "B", "C").
    return lambda output: isinstance(output.get("judge_result"), kind)


def _iteration_outputs_are(kind: type) -> Callable[[Mapping[str, Any]], bool]:
    # SelfAskPipeline stores each step's text, IRCOTPipeline a dict {input_prompt, new_thought, ...}.
    def check(output: Mapping[str, Any]) -> bool:
        steps = [v for k, v in output.items() if k.startswith("intermediate_output_iter")]
        return all(isinstance(v, kind) for v in steps)

    return check


# Where the family's writers were read (the index holds copies; the originals hold only a README there).
_RESEARCH_PIPELINE = (
    "src/flashrag/pipeline/active_pipeline.py@205fc92 ReSearchPipeline.run_item L216-297 (update_output "
    "'final_response' = the generation with `<result>` blocks of the hits' contents joined by blank "
    "lines, 'pred' = remove_boxed(last_boxed_only_string(extract_answer(final_response))), '' when over "
    "length), R1SearcherPipeline.run_item L79-171 (`<|begin_of_documents|>` blocks, pred = the first "
    "<answer> stripped); extract_answer / remove_boxed / last_boxed_only_string: "
    "verl/utils/reward_score/re_search.py (zeocax/verl@588c245 L48-56, L58-69, L71-98)"
)
_RESEARCH_RUN_EVAL = (
    "scripts/evaluation/run_eval.py@205fc92 research() L80-88, save_note = --save_note or the method name L136"
)
_ZEROSEARCH_WRITER = (
    "verl/trainer/main_ppo.py AccManager.__call__ (YuchenFan48/ZeroSearch@9fb5935 L96-147; "
    "cx9941/CriticSearch@70c64c8 the same): one {prompt: decode(prompt ids), response_str: decode(valid "
    "prompt + response ids), ground_truth: target list, em_score, f1_score: float(score_em)} per item "
    "(L135); verl/trainer/ppo/ray_trainer.py RayPPOTrainer._validate (cx9941/CriticSearch@70c64c8 "
    "L446-615, json.dump L613) writes the list to {default_local_dir}/record_init.json (fit L734)"
)
_ZEROSEARCH_SCORE = (
    "verl/utils/reward_score/qa_em.py (YuchenFan48/ZeroSearch@9fb5935) compute_score L131-150: "
    "extract_solution L117-128 (the last <answer> of prompt + response if two or more, else None), "
    "em_check L94-101 (em: a normalized gold inside the normalized answer; None normalizes to 'No answer')"
)
_STEPSEARCH_WRITER = (
    "verl/trainer/ppo/ray_trainer.py@312a340 RayPPOTrainer._validate L469-686: with trainer.save_predictions, one "
    "{id, data_source, prompt: decode(valid prompt ids), response: decode(valid response ids), ground_truth} per item "
    "(L611-617) json.dumped to {default_local_dir}/predictions/<timestamp>.json (L642); no score stored"
)
_STEPSEARCH_SCORE = (
    "verl/utils/reward_score/qa_step.py@140c89b compute_score_f1_steps_plan_with_support_docs L275-337: "
    "answer_correct = query_f1_score L72-107 (token F1, rounded to 4 places) of extract_solution L27-39 (the "
    "last <answer>, stripped); documents as `<## title ##> text` (extract_content_from_information L57-69)"
)


# --- The family's own readings, written from their code (cited in each layout's writer) -----------------------------

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def zerosearch_response(record: Mapping[str, Any]) -> str | None:
    """ZeroSearch's generation: `response_str` is decode(valid prompt ids + response ids), `prompt` decode(all prompt
    ids), left padding included; the generation is what follows the prompt's unpadded tail in `response_str`."""
    text, prompt = record.get("response_str"), record.get("prompt")
    if not isinstance(text, str):
        return None
    if not isinstance(prompt, str):
        return text
    for start in range(len(prompt) + 1):  # the shortest padding prefix whose removal leaves a prefix of response_str
        if text.startswith(prompt[start:]):
            rest = text[len(prompt) - start :]
            return rest if rest.strip() else None
    return text


def zerosearch_prediction(record: Mapping[str, Any]) -> str | None:
    """qa_em.extract_solution on prompt + response: the last `<answer>`, stripped, only if there are two or more (the
    prompt's own example `<answer> Beijing </answer>` is one); None otherwise."""
    text = record.get("response_str")
    matches = list(_ANSWER.finditer(text)) if isinstance(text, str) else []
    return matches[-1][1].strip() if len(matches) > 1 else None


def stepsearch_prediction(record: Mapping[str, Any]) -> str | None:
    """qa_step.extract_solution on the response: the last `<answer>`, stripped; None if there is none."""
    text = record.get("response")
    matches = list(_ANSWER.finditer(text)) if isinstance(text, str) else []
    return matches[-1][1].strip() if matches else None


R1_SEARCHER_NO_ANSWER = "I don't know."


def r1_searcher_trajectory_answer(record: Mapping[str, Any]) -> str | None:
    """What R1-Searcher's eval script records as `pred_ans` from the trajectory it stores (eval_search_loacl.py main()
    L215-221, RUCAIBox/R1-Searcher@631167c): a generation that stopped at `</answer>` and holds `<answer>` gives
    `generated_text.split("<answer>")[-1].split("</answer>")[0]`, unstripped, and `gen_text_store` ends with that
    generation plus `</answer>`; every other ending (query_inst_error, shot_down, many_retrieve) records "I don't
    know.". None where the record keeps no `gen_text_store` (shot_down and many_retrieve items): nothing to check."""
    text = record.get("gen_text_store")
    if not isinstance(text, str):
        return None
    if record.get("stop_reason_final", "finished") != "finished" or "<answer>" not in text:
        return R1_SEARCHER_NO_ANSWER
    body = text.removesuffix("</answer>")
    return body.split("<answer>")[-1].split("</answer>")[0]


_FIRST_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def _research_extract_answer(text: str) -> str | None:
    # re_search.extract_answer: the first <answer> block of the stripped text, unstripped; None without one
    match = _FIRST_ANSWER.search(text.strip())
    return match[1] if match else None


def _research_boxed(answer: str) -> str:
    """re_search.remove_boxed(last_boxed_only_string(answer)); "" where either fails (the pipeline's except)."""
    if "\\boxed " in answer:
        return answer.split("\\boxed ")[-1].split("$")[0]
    start = answer.rfind("\\boxed")
    if start < 0:
        return ""  # no \boxed: an \fbox, if any, fails remove_boxed's check, so the pipeline records ""
    depth = 0
    for end in range(start, len(answer)):
        depth += (answer[end] == "{") - (answer[end] == "}")
        if answer[end] == "}" and depth == 0:
            boxed = answer[start : end + 1]
            return boxed[len("\\boxed{") : -1] if boxed.startswith("\\boxed{") else ""
    return ""


def research_trajectory_answer(record: Mapping[str, Any]) -> str | None:
    """What ReSearch's FlashRAG pipelines record as `pred` from `final_response` (SevenFo/ReSearch@205fc92
    src/flashrag/pipeline/active_pipeline.py: R1SearcherPipeline.run_item L155-167, the first <answer> stripped;
    ReSearchPipeline.run_item L283-296, remove_boxed(last_boxed_only_string(...)) of it, "" on any failure;
    re_search.py extract_answer / remove_boxed / last_boxed_only_string, zeocax/verl@588c245 L48-56, L58-69, L71-98).
    A generation over length records "" whatever it holds, which the file does not otherwise say."""
    output = record.get("output")
    text = output.get("final_response") if isinstance(output, Mapping) else None
    if not isinstance(text, str):
        return None
    answer = _research_extract_answer(text)
    if answer is None:
        return ""
    return answer.strip() if "<|begin_of_query|>" in text else _research_boxed(answer)


# What follows `{question}` in the user prompts of FlashRAG's reasoning_pipeline.py: ReasoningPipeline's (R1-Searcher)
# "User:{question}\nAssistant: <think>", SearchR1Pipeline's "Question: {question}\n", AutoRefinePipeline's
# "<user> Question: {question} </user>". PromptTemplate applies a chat template only to a model whose name says chat or
# instruct (flashrag/prompt/base_prompt.py@8bb69ac L22-25): run_exp.py's R1-Searcher, Search-R1 and AutoRefine models
# get these plain prompts.
_PROMPT_TAILS = ("\nAssistant: <think>", " </user>", "\n")
_CHAT_ASSISTANT_HEADERS = (
    "<|im_start|>assistant\n",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<start_of_turn>model\n",
)


def response_of(output: Mapping[str, Any], question: str) -> str | None:
    """A FlashRAG reasoning pipeline's generation: what follows the question (past the assistant header of a chat
    prompt) in `output.prompt`, where `ReasoningPipeline.run` appends every step. A prompt that ends at the assistant
    header holds no response: None, never an empty answer."""
    prompt = output.get("prompt")
    if not isinstance(prompt, str) or not question or question not in prompt:
        return None
    rest = prompt[prompt.find(question) + len(question) :]
    for header in _CHAT_ASSISTANT_HEADERS:
        if header in rest:
            rest = rest[rest.find(header) + len(header) :]
            break
    else:
        # Without a chat template the prompt goes on after the question with the template's own tail.
        rest = next((rest[len(tail) :] for tail in _PROMPT_TAILS if rest.startswith(tail)), rest)
    return rest if rest.strip() else None


_REASONING_RUN = (
    "flashrag/pipeline/reasoning_pipeline.py@8bb69ac ReasoningPipeline.run L86-149 (each step appended as "
    "step_output.strip() L116; pred L106, L118, L127, L132), _retrieved_docs_to_string L74-84; SearchR1Pipeline "
    "(L269) and AutoRefinePipeline (L316) keep that run() with their own tags; flashrag/utils/utils.py@8bb69ac "
    "extract_between L180-185; flashrag/generator/generator.py@8bb69ac L238-240 (vLLM keeps the stop string)"
)


@dataclass(frozen=True)
class ReasoningTags:
    """The tags one of FlashRAG's pipelines that keep ReasoningPipeline.run() was built with (its __init__ defaults)."""

    begin_query: str
    end_query: str
    begin_documents: str
    end_documents: str

    def block_opening(self) -> str:
        # a retrieval block follows only a step that ends with the query's end tag (run L122), and the pipeline opens
        # it with a blank line (_retrieved_docs_to_string L83): the model's own text never holds this, as vLLM stops at
        # the end tag
        return f"{self.end_query}\n\n{self.begin_documents}\n"

    def block_closing(self) -> str:
        return f"\n{self.end_documents}\n\n"


# By the documents tag each pipeline's instructions name: ReasoningPipeline (R1-Searcher) L37-42, SearchR1Pipeline
# L282-287, AutoRefinePipeline L332-337. SimpleDeepSearcherPipeline and O2SearcherPipeline have a run() of their own.
REASONING_TAGS = (
    ReasoningTags("<|begin_of_query|>", "<|end_of_query|>", "<|begin_of_documents|>", "<|end_of_documents|>"),
    ReasoningTags("<search>", "</search>", "<information>", "</information>"),
    ReasoningTags("<search>", "</search>", "<documents>", "</documents>"),
)
FLASHRAG_NO_ANSWER = "No valid answer found"  # ReasoningPipeline.run L106, L127
FLASHRAG_MAX_RETRIEVAL = 5  # ReasoningPipeline's max_retrieval_num default; run_exp.py r1searcher()/searchr1() keep it
_MAX_RETRIEVAL_REASON = "Reach max retrieval number"  # the finish_reason run() records beside FLASHRAG_NO_ANSWER


def _last_between(text: str, start: str, end: str) -> str | None:
    """extract_between: the last non-overlapping `start ... end` span, stripped; None where there is none."""
    spans = re.findall(re.escape(start) + r"(.*?)" + re.escape(end), text, flags=re.DOTALL)
    return spans[-1].strip() if spans else None


def _reasoning_tags(instructions: str, generation: str) -> ReasoningTags | None:
    """The pipeline's tags: those whose documents tag the prompt's instructions name, else those whose retrieval
    blocks the generation holds; None where neither tells (another template, or a pipeline with its own run())."""
    named = [tags for tags in REASONING_TAGS if tags.begin_documents in instructions]
    if named:
        return named[0]
    return next((tags for tags in REASONING_TAGS if tags.block_opening() in generation), None)


def flashrag_reasoning_answer(record: Mapping[str, Any]) -> str | None:
    """What FlashRAG's ReasoningPipeline.run records as `pred` (reasoning_pipeline.py@8bb69ac L106, L116-134; the lines
    read are `_REASONING_RUN`), from the trajectory it keeps in `output.prompt` (the prompt, then each step's stripped
    text and each retrieval block; no other field keeps the generation):

    - the last step is what follows the last retrieval block (the whole generation where none was retrieved);
    - a last step ending with `</answer>` (or holding it and ending with `<|endoftext|>`): extract_between over it,
      the last `<answer>…</answer>` stripped, through str() ("None" where no `<answer>` opens it);
    - any other last step: its text (finish_reason 'Normal finish without answer pattern');
    - nothing after the last block: "No valid answer found" if the loop ran out of retrievals (the finish_reason the
      pipeline records says so; without one, 5 blocks, the default max_retrieval_num), else "" (a blank last step).

    run() tests the unstripped step; the prompt keeps it stripped. Under vLLM (run_exp.py's framework) a step ends at
    the first stop string and keeps it, so stripping removes no text the tests read. A `pred_process_fun` passed to
    run() would rewrite pred after this (run_exp.py passes none). None where the record keeps no prompt holding its
    question, names no tags of these pipelines, or ends on a query no retrieval followed: nothing to check."""
    output, question = record.get("output"), record.get("question")
    if not isinstance(output, Mapping) or not isinstance(question, str) or not question:
        return None
    prompt = output.get("prompt")
    if not isinstance(prompt, str) or question not in prompt:
        return None
    generation = response_of(output, question) or ""
    tags = _reasoning_tags(prompt[: prompt.find(question)], generation)
    if tags is None:
        return None
    start = generation.rfind(tags.block_opening())
    last = generation
    if start >= 0:
        close = generation.find(tags.block_closing(), start + len(tags.block_opening()))
        if close < 0:
            return None  # a retrieval block the pipeline did not close: not its trajectory
        last = generation[close + len(tags.block_closing()) :]
    last = last.strip()
    if not last:
        reason = output.get("finish_reason")
        ran_out = (
            reason == _MAX_RETRIEVAL_REASON
            if isinstance(reason, str)
            else generation.count(tags.block_opening()) >= FLASHRAG_MAX_RETRIEVAL
        )
        return FLASHRAG_NO_ANSWER if ran_out else ""
    if "</answer>" in last and (last.endswith("</answer>") or last.endswith("<|endoftext|>")):
        return str(_last_between(last, "<answer>", "</answer>"))
    if tags.begin_query in last and last.endswith(tags.end_query):
        return None  # run() would have retrieved after this step
    return last


def autorefine_log_response(record: Mapping[str, Any]) -> str | None:
    """AutoRefine's training log stores `response` = decode(valid prompt ids + response ids): the generation is what
    follows the chat template's last assistant header (its scores read the response ids alone, LOG_FUNCS)."""
    text = record.get("response")
    if not isinstance(text, str):
        return None
    for header in ("<|im_start|>assistant\n", "<|start_header_id|>assistant<|end_header_id|>\n\n"):
        if header in text:
            return text[text.rfind(header) + len(header) :]
    return text


def autorefine_log_prediction(record: Mapping[str, Any]) -> str | None:
    """qa_em.extract_solution on the response: the last `<answer>`, stripped; None if there is none."""
    text = autorefine_log_response(record)
    matches = list(_ANSWER.finditer(text)) if isinstance(text, str) else []
    return matches[-1][1].strip() if matches else None


def blank_line_passages(content: str) -> list[Passage]:
    """Each hit's `contents` followed by a blank line, the whole stripped: ReSearchPipeline.run_item's `<result>` and
    R1SearcherPipeline.run_item's `<|begin_of_documents|>` (R1-Searcher's own parser reads `(i)Title: t Text: x` only).
    reason_over_search's SearchR1Pipeline joins its `<information>` so too, which Search-R1's parser already splits."""
    return [_passage(part) for part in content.strip().split("\n\n") if part.strip()]


_NUMBERED_DOC = re.compile(r"^\((\d+)\)", re.MULTILINE)


def r1_searcher_passages(content: str) -> list[Passage]:
    """R1-Searcher's eval script: `(i)` + the retrieval server's document string + a newline per document, i = 1, 2, …
    (a line that starts with another number is part of the document before it)."""
    starts, expected = [], 1
    for marker in _NUMBERED_DOC.finditer(content):
        if int(marker[1]) == expected:
            starts.append(marker)
            expected += 1
    return [
        _passage(content[marker.end() : starts[i + 1].start() if i + 1 < len(starts) else len(content)])
        for i, marker in enumerate(starts)
    ]


_STEP_TITLE = re.compile(r"<##(.*?)##>", re.DOTALL)


def stepsearch_passages(content: str) -> list[Passage]:
    """StepSearch's `<information>`: `<## title ##> text` per document (qa_step extract_titles_from_information and
    extract_content_from_information read it so)."""
    titles = list(_STEP_TITLE.finditer(content))
    passages = []
    for i, title in enumerate(titles):
        text = content[title.end() : titles[i + 1].start() if i + 1 < len(titles) else len(content)].strip()
        passages.append(Passage(title=title[1].replace("Title:", "").strip().strip('"') or None, text=text))
    return passages or ([_passage(content)] if content.strip() else [])


def _passage(contents: str) -> Passage:
    title, text = split_contents(contents.strip())
    return Passage(title=title.strip('"') or None, text=text) if text else Passage(text=title)


FLASHRAG_PIPELINES: dict[str, ResultLayout] = {
    layout.name: layout
    for layout in (
        _flashrag(
            "sequential",
            "flashrag/pipeline/pipeline.py@6195456 SequentialPipeline.run L82-130 and "
            ".naive_run L71-80 (update_output 'prompt', 'retrieval_result', 'refine_result', "
            "'pred'); BasicPipeline.evaluate L26-41 applies pred_process_fun",
            required=set(),
            allowed=_SEQUENTIAL_KEYS,
            save_notes=(
                "naive",
                "zero-shot",
                "AAR-contriever",
                "AAR-ANCE",
                "longllmlingua",
                "recomp-abstractive",
                "recomp-extractive",
                "selective-context",
                "trace",
                "spring",
            ),
            response="output.raw_pred|output.pred",
        ),
        _flashrag(
            "conditional",
            "flashrag/pipeline/pipeline.py@6195456 ConditionalPipeline.run "
            "L161-179 (update_output 'judge_result': bool per item)",
            required={"judge_result"},
            allowed=_SEQUENTIAL_KEYS,
            save_notes=("skr",),
            response="output.pred",
            check=_judge_is(bool),
        ),
        _flashrag(
            "adaptive",
            "flashrag/pipeline/pipeline.py@6195456 AdaptivePipeline.run "
            "L231-253 (judge_result 'A'/'B'/'C'; 'C' items run IRCOTPipeline)",
            required={"judge_result"},
            allowed=_SEQUENTIAL_KEYS,
            patterns=(r"intermediate_output_iter\d+", "scores"),
            save_notes=("adaptive-rag",),
            response="output.raw_pred|output.pred",
            check=_judge_is(str),
        ),
        _flashrag(
            "replug",
            "flashrag/pipeline/branching_pipeline.py@16074be REPLUGPipeline.run "
            "L32-60 (update_output 'retrieval_result', 'doc_scores', 'pred')",
            required={"doc_scores"},
            allowed={"retrieval_result"},
            save_notes=("replug",),
            response="output.pred",
        ),
        _flashrag(
            "sure",
            "flashrag/pipeline/branching_pipeline.py@16074be SuRePipeline.run L167-250 "
            "('candidates', 'all_summary', 'val_scores', 'ranking_scores'; pred = best candidate)",
            required={"candidates"},
            allowed={"retrieval_result", "all_summary", "val_scores", "ranking_scores"},
            save_notes=("SuRe",),
        ),
        _flashrag(
            "iterative",
            "flashrag/pipeline/active_pipeline.py@16074be IterativePipeline.run L19-52 "
            "('retrieval_result_iter_k', 'prompt_iter_k', 'pred_iter_k'; pred = last pred_iter)",
            required={"pred_iter_0"},
            allowed={"retrieval_result"},
            patterns=(r"retrieval_result_iter_\d+", r"prompt_iter_\d+", r"pred_iter_\d+"),
            save_notes=("iter-retgen",),
            response="output.pred",
        ),
        _flashrag(
            "self-rag",
            "flashrag/pipeline/active_pipeline.py@16074be SelfRAGPipeline.run_batch_pred "
            "L618-675 ('retrieval_flag', 'prompt' list, 'critic_result'; pred post-processed)",
            required={"retrieval_flag"},
            allowed={"retrieval_result", "prompt", "critic_result", "intermediate_result"},
            save_notes=("self-rag",),
        ),
        _flashrag(
            "flare",
            "flashrag/pipeline/active_pipeline.py@16074be FLAREPipeline.run_item L733-778 "
            "('judge_result_iter{k}', 'gen_iter_{k}', 'retrieval_result'; pred = the sentences joined)",
            required={"judge_result_iter0"},
            allowed={"retrieval_result"},
            patterns=(r"judge_result_iter\d+", r"gen_iter_\d+"),
            save_notes=("flare",),
            response="output.pred",
        ),
        _flashrag(
            "self-ask",
            "flashrag/pipeline/active_pipeline.py@16074be SelfAskPipeline.run_item L823-893, run L895-900 + "
            "flashrag/utils selfask_pred_parse (raw_pred = the chain, pred = 'So the final answer is:' line)",
            required={"raw_pred", "intermediate_output_iter0"},
            allowed={"retrieval_result"},
            patterns=(r"intermediate_output_iter\d+",),
            save_notes=("Ret-Robust", "ret-robust", "selfask"),
            response="output.raw_pred",
            check=_iteration_outputs_are(str),
        ),
        _flashrag(
            "ircot",
            "flashrag/pipeline/active_pipeline.py@16074be IRCOTPipeline.run_item L924-973, run L975-980 + "
            "flashrag/utils ircot_pred_parse (raw_pred = thoughts joined, pred = after 'So the answer is:')",
            required={"raw_pred"},
            allowed={"retrieval_result", "scores"},
            patterns=(r"intermediate_output_iter\d+",),
            save_notes=("ircot",),
            response="output.raw_pred",
            check=_iteration_outputs_are(dict),
        ),
        _flashrag(
            "rqrag",
            "flashrag/pipeline/active_pipeline.py RQRAGPipeline.run ('paths' = best path {prompt, depth, done, "
            "final_answer, confidence}; pred = final_answer; read from a FlashRAG-derived copy of the file the index "
            "holds unnamed, FlashRAG's active_pipeline.py@16074be predating the class; "
            "flashrag/pipeline/__init__.py@f792919 L4 imports it, examples/methods/run_exp.py@8e16b75 rqrag() runs it)",
            required={"paths"},
            save_notes=("rqrag",),
        ),
        _flashrag(
            "reasoning",
            "flashrag/pipeline/reasoning_pipeline.py@8e16b75 ReasoningPipeline.run L82-145, which SearchR1Pipeline "
            "(read from an unnamed later copy) inherits ('prompt' = prompt + every step and _retrieved_docs_to_string "
            "L70-80, 'finish_flag', 'finish_reason', 'retrieval_results', 'retrieved_times'); pred re-derived from "
            f"'prompt' by {_REASONING_RUN}",
            required={"prompt", "finish_flag"},
            allowed={"retrieval_results", "retrieved_times", "finish_reason"},
            save_notes=("r1-searcher", "search-r1", "searchr1"),
            response_in_prompt=True,
            parse_turns=True,
            method_markers=(("<|begin_of_query|>", "r1-searcher"), ("<search>", "search-r1")),
            trajectory_answer=flashrag_reasoning_answer,
        ),
    )
}
# The Search-R1 family's own result files.
FAMILY_LAYOUTS: dict[str, ResultLayout] = {
    layout.name: layout
    for layout in (
        ResultLayout(
            "search-r1-results",
            "Search-R1 evaluation results in FlashRAG's Dataset.save format, as GaurisankarJ/reason_over_search writes "
            "them: evaluation_search_r1/flashrag/pipeline/active_pipeline.py@830cdd1 SearchR1Pipeline.run_item L73-204 "
            "(output query L83; final_response, stop_reason, stop_matched_idx/text, prompt_tokens, completion_tokens, "
            "remain_length L164-184; pred = _extract_pred_fallback L47-71 (boxed, else the <answer> text) L187-191; "
            "search_r1_* L200-204; the hits' contents joined by blank lines in <information> L140, which Search-R1's "
            "parser splits; files of other commits hold Search-R1's `Doc i(Title: t) text` lines)",
            FieldMap(prediction=None, response="output.final_response", prompt="output.query"),
            required=frozenset({"final_response"}),
            allowed=frozenset(
                {
                    "query",
                    "pred",
                    "stop_reason",
                    "prompt",
                    "stop_matched_idx",
                    "stop_matched_text",
                    "prompt_tokens",
                    "completion_tokens",
                    "remain_length",
                }
            ),
            patterns=(r"search_r1_\w+",),
            parse_prediction=True,
            parse_turns=True,
            recorded=(r"search_r1_\w+",),
        ),
        ResultLayout(
            "r1-searcher-eval",
            "R1-Searcher's eval script main() (RUCAIBox/R1-Searcher holds only its README here; read from "
            "two copies: WangYuzzu/GenR1-Searcher evaluation/eval_search_local.py@ccac151 main() L93-386: "
            "a finished item {idx, question, answer, pred_ans, stop_reason_final, gen_text_store, "
            "search_count, gendoc_count} L198-209, shot_down L281-291, documents '(i)' + doc + newline per "
            "hit L309-325, appended to <src_file>-<model>_two_tools_temp<t>_type<p>.jsonl L378-383; and an "
            "unnamed evaluation/eval_search_loacl.py without idx, closing queries with <|end_of_query|>)",
            FieldMap(prediction="pred_ans", response="gen_text_store", golds="answer", id="idx|#", scores=None),
            required=frozenset({"question", "answer", "pred_ans"}),
            allowed=frozenset(
                {
                    "idx",
                    "gen_text_store",
                    "stop_reason_final",
                    "generated_text",
                    "search_count",
                    "gendoc_count",
                    "stop_reason",
                    "chat_prompt",
                }
            ),
            container=None,
            method="r1-searcher",
            parse_turns=True,
            passages=(("<|begin_of_documents|>", "<|end_of_documents|>", r1_searcher_passages),),
            # metric_calc_rule.py update_answer's per-item values, where a copy of the script stores them
            patterns=(r"em|f1|prec|recall|cover_em(_[12])?",),
            recorded=(r"em|f1|prec|recall|cover_em(_[12])?",),
            trajectory_answer=r1_searcher_trajectory_answer,
        ),
        ResultLayout(
            "autorefine-log",
            "AutoRefine verl/trainer/main_ppo.py@8363788 RewardManager.get_logging_scores L80-131 (log_info L121-127): "
            "one {step, data_source, scores: LOG_FUNCS L29-37 of the response (information_scores, "
            "information_reverse_rank, answer_em, answer_f1, answer_cem, refine_scores, format_scores), "
            "ground_truth: the target list, response: decode(prompt + response ids)} per logged item, appended to "
            "log/val/<experiment>.jsonl; answer_* score "
            "verl/utils/reward_score/qa_em.py extract_solution L147-157 (the last <answer> of the response, stripped) "
            "with em_check L89-99, compute_f1_scores L37-63, cover_em_check L102-113",
            FieldMap(
                prediction=None,
                response="response",
                golds="ground_truth",
                id="#",
                question=None,
                scores="scores",
                prompt="response",
            ),
            required=frozenset({"step", "data_source", "scores", "ground_truth", "response"}),
            container=None,
            parse_prediction=True,
            parse_turns=True,
            question_pattern=r"Question: (.*?)\n",
            read_response=autorefine_log_response,
            predict=autorefine_log_prediction,
        ),
        ResultLayout(
            "autorefine-results",
            "AutoRefine cmd/llm_judge.py@0d79ca9: the result JSONL it reads (L20-21: response, "
            "ground_truth, data_source) and score_item L40-71 extends (llm_score, prompt_tokens, "
            "completion_tokens; written L79-81); the prediction is extract_answer L32-34: the "
            "last <answer>, else the response (L45-47); the question extract_question L36-38",
            FieldMap(prediction=None, response="response", golds="ground_truth", id="id|#", question=None, scores=None),
            required=frozenset({"response", "ground_truth", "data_source"}),
            allowed=frozenset({"llm_score", "prompt_tokens", "completion_tokens", "id", "question"}),
            container=None,
            parse_prediction=True,
            parse_turns=True,
            recorded=("llm_score",),
            question_pattern=r"Question: (.*?)\n",  # llm_judge.py extract_question
        ),
        ResultLayout(
            "research-flashrag",
            "ReSearch (Agent-RL/ReSearch, later ReCall; read from the copy SevenFo/ReSearch): "
            f"{_RESEARCH_PIPELINE} and the same keys from R1SearcherPipeline.run_item (method "
            f"r1r); {_RESEARCH_RUN_EVAL}; FlashRAG's Evaluator scores pred",
            FieldMap(prediction="output.pred", response="output.final_response"),
            required=frozenset({"final_response", "pred"}),
            save_notes=("research", "r1r"),
            parse_turns=True,
            method_markers=(("<|begin_of_query|>", "r1-searcher"), ("<result>", "oases")),
            passages=(
                ("<result>", "</result>", blank_line_passages),
                ("<|begin_of_documents|>", "<|end_of_documents|>", blank_line_passages),
            ),
            # a Search-R1 reproduction keeps the same two keys in some files: its observations are <information> blocks
            check=lambda output: "<information>" not in str(output.get("final_response")),
            trajectory_answer=research_trajectory_answer,
            empty_prediction="ReSearch's pipelines record '' for a generation that ran over length",
        ),
        ResultLayout(
            "zerosearch-validation",
            "ZeroSearch (Alibaba-NLP/ZeroSearch holds only its README here; read from "
            f"two forks that keep its trainer): {_ZEROSEARCH_WRITER}; {_ZEROSEARCH_SCORE}",
            FieldMap(
                prediction=None,
                response="response_str",
                golds="ground_truth",
                id="#",
                question=None,
                scores=None,
                prompt="prompt",
            ),
            required=frozenset({"prompt", "response_str", "ground_truth", "em_score", "f1_score"}),
            container=None,
            parse_prediction=True,
            parse_turns=True,
            recorded=("em_score", "f1_score"),
            question_pattern=r"Question: (.*?)\n",  # Search-R1's make_prefix, which ZeroSearch's data keeps
            read_response=zerosearch_response,
            predict=zerosearch_prediction,
        ),
        ResultLayout(
            "stepsearch-predictions",
            f"StepSearch (Zillwang/StepSearch holds only its README and a shell script here; read from the copy "
            f"WANGKANG1717/StepSearch): {_STEPSEARCH_WRITER}; {_STEPSEARCH_SCORE}",
            FieldMap(
                prediction=None,
                response="response",
                golds="ground_truth",
                id="id",
                question=None,
                scores=None,
                prompt="prompt",
            ),
            required=frozenset({"id", "data_source", "prompt", "response", "ground_truth"}),
            container=None,
            parse_prediction=True,
            parse_turns=True,
            question_pattern=r"Question: (.*?)\n",
            predict=stepsearch_prediction,
            passages=(("<information>", "</information>", stepsearch_passages),),
        ),
    )
}
LAYOUTS: dict[str, ResultLayout] = {**FLASHRAG_PIPELINES, **FAMILY_LAYOUTS}
_FIELD_NAMES = tuple(vars(FieldMap()))


def get_layout(name: str) -> ResultLayout:
    if name not in LAYOUTS:
        raise unknown_name("pipeline", name, LAYOUTS)
    return LAYOUTS[name]


def layout_of_save_note(note: str) -> ResultLayout | None:
    """The layout a FlashRAG `save_note` (config.yaml, or the folder name's last part) names, if a known one: a FlashRAG
    pipeline's, or a fork's run_eval.py method name (ReSearch's `research`)."""
    low = note.lower()
    for layout in LAYOUTS.values():
        if any(low == n.lower() for n in layout.save_notes):
            return layout
    return None


def detect_layout(record: Mapping[str, Any]) -> ResultLayout | None:
    """The most specific layout whose writer produces this record's keys; else the most specific one whose identifying
    keys the record has beside keys of its own (an extra key never makes a known layout unrecognisable; the extra keys
    are listed as not read, `extra_keys`); None if none does."""
    fitting = [layout for layout in LAYOUTS.values() if layout.matches(record)]
    if not fitting:
        fitting = [
            layout for layout in LAYOUTS.values() if layout.required and layout.matches(record, extra_allowed=True)
        ]
    return max(fitting, key=lambda layout: len(layout.required)) if fitting else None


def extra_keys(record: Mapping[str, Any], layout: ResultLayout) -> list[str]:
    """The keys of `record` its layout's writer does not store (dotted under its container)."""
    part = layout.part_of(record)
    prefix = f"{layout.container}." if layout.container else ""
    return [prefix + key for key in layout.extra_keys(set(part))] if part is not None else []


def nearest_layout(record: Mapping[str, Any]) -> tuple[ResultLayout, list[str]]:
    """The layout closest to a record none accounts for, and the identifying keys it lacks: the one missing the
    fewest of its identifying keys (then the one sharing the most keys with the record)."""

    def distance(layout: ResultLayout) -> tuple[int, int]:
        part = layout.part_of(record) or {}
        known = layout.required | layout.allowed
        return len(layout.required - set(part)), -len(known & set(part))

    best = min((layout for layout in LAYOUTS.values() if layout.required), key=distance)
    part = best.part_of(record) or {}
    prefix = f"{best.container}." if best.container else ""
    return best, sorted(prefix + key for key in best.required - set(part))


def parse_fields(text: str) -> ResultLayout:
    """`--fields prediction=pred_ans,response=gen_text_store,golds=answer,id=idx` as a layout."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, path = part.partition("=")
        name = name.strip()
        if not sep or not path.strip():
            raise EvalsuiteError(f"--fields: expected NAME=PATH, got {part!r}", hint=FIELDS_HINT)
        if name not in _FIELD_NAMES:
            raise unknown_name("field", name, _FIELD_NAMES)
        mapping[name] = path.strip()
    if "prediction" not in mapping and "response" not in mapping:
        raise EvalsuiteError("--fields names neither prediction nor response", hint=FIELDS_HINT)
    base = FieldMap(prediction=None, scores=None, id="#")
    fields = replace(base, **mapping)
    return ResultLayout(
        "fields",
        f"--fields {text}",
        fields,
        container=None,
        parse_prediction=fields.prediction is None,
        parse_turns=fields.response is not None,
    )


FIELDS_HINT = (
    "pass --fields prediction=PATH,response=PATH,golds=PATH,id=PATH,question=PATH "
    "(dotted paths into each record, e.g. output.pred)"
)


def lookup(record: Any, path: str) -> Any:
    """The value at a dotted path (`output.pred`, `answers.0`), or `MISSING`; `a|b`: the first of them present."""
    if "|" in path:
        values = (lookup(record, alternative) for alternative in path.split("|"))
        return next((value for value in values if value is not MISSING), MISSING)
    value = record
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def require_path(record: Any, path: str, role: str, where: str, layout: ResultLayout) -> Any:
    """The value at `path`, or one error naming the record, the field looked for and how to map another."""
    value = lookup(record, path)
    if value is MISSING:
        raise missing_field(record, path, role, where, layout)
    return value


def missing_field(record: Any, path: str, role: str, where: str, layout: ResultLayout) -> DataError:
    """One line: the record, the field its layout looked for, the keys it has, and what to pass."""
    if layout.name == "fields":
        return DataError(
            f"{where}: missing '{path}' (named by --fields {role}={path}); {_present_keys(record, path)}",
            hint=f"map {role} to a field the records have: --fields {role}=PATH (dotted, e.g. output.pred)",
        )
    return DataError(
        f"{where}: missing '{path}' (the {role} field of layout {layout.name}); {_present_keys(record, path)}",
        hint=f"pass --pipeline NAME if another writer made this file, or {FIELDS_HINT}",
    )


def _present_keys(record: Any, path: str) -> str:
    """`the record's output has: a, b`: the keys of the deepest mapping along `path` that is there."""
    parent, label = record, "record"
    for part in path.split("|")[0].split(".")[:-1]:
        if not isinstance(parent, Mapping) or not isinstance(parent.get(part), Mapping):
            break
        parent, label = parent[part], f"record's {part}" if label == "record" else f"{label}.{part}"
    keys = ", ".join(list(parent)[:12]) if isinstance(parent, Mapping) else type(parent).__name__
    return f"the {label} has: {keys}"


def golds_of(value: Any) -> list[str] | None:
    """Gold answers as a list of strings: a list, one string, or Search-R1's `{"target": [...]}` ground truth."""
    if isinstance(value, Mapping) and "target" in value:
        value = value["target"]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(g, (str, int, float)) for g in value):
        return [str(g) for g in value]
    return None
