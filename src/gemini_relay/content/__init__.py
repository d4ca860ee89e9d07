"""What prompts and answers are made of: `@` inlining, changeMode, chunking, review and plan prompt builders, the
structured-output check, the rate card. No MCP. These read the files a prompt references and nothing else, with
a few exceptions, named so nobody mistakes them for pure code (tests/content/test_purity.py keeps the list true):

Reaching outside: git_diff (runs git), guardrail (runs git through git_diff), fetch_image (an HTTPS client),
worktree (runs git through git_diff), worktree_reap (runs git through worktree).
"""
