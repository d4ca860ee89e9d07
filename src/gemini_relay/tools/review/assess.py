"""gemini-assess: size up a diff (local git, no model call) and say which review depth fits, with its wall time."""

from __future__ import annotations

from gemini_relay.content.diff_assessment import assess_changes
from gemini_relay.content.git_diff import GitError, changes_and_untracked, diff_spec, git_env
from gemini_relay.core.vocabulary import Effect, Toolset
from gemini_relay.log import logger
from gemini_relay.tools.common import output_schemas as out
from gemini_relay.tools.common.context import Deps, Reply
from gemini_relay.tools.common.definition import Doc, ToolDef
from gemini_relay.tools.common.progress import CallProgress
from gemini_relay.tools.review.review_inputs import DiffInput


class AssessInput(DiffInput):
    """gemini-assess takes the diff's selection alone."""


async def assess(deps: Deps, args: AssessInput, call: CallProgress) -> Reply:
    spec = diff_spec(uncommitted=args.uncommitted, base=args.base)
    root = deps.resolve_cwd(args.working_directory, "workingDirectory")
    changes, untracked = await changes_and_untracked(root, spec, git_env(deps.settings.env))
    if isinstance(untracked, GitError):
        logger.info("gemini-assess: untracked files not listed: %s", untracked)
        untracked = []
    assessment = assess_changes(spec, root, changes, untracked)
    data = assessment.as_meta()
    return Reply(assessment.render(), data, structured=data)


DOC = Doc(
    "Size up a diff before reviewing it, in well under a second and without a model call: runs git locally and "
    "returns the diff stats, changed files, complexity (trivial/moderate/complex), kind (empty/code/mixed/"
    "non-code/generated), guidance, and each gemini-review depth with its estimated wall time. Uncommitted "
    "work by default, or base...HEAD.",
    prompt="Assess a git diff and recommend a review depth.",
)
TOOL = ToolDef(
    "gemini-assess", AssessInput, assess, Effect.LOCAL, DOC, toolset=Toolset.REVIEW, output_schema=out.ASSESSMENT
)
