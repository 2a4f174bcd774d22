"""The leaderboard: pack submissions, verify them against the registry's gold answers, file them, build the site."""

from evalsuite.leaderboard.pack import pack_submission
from evalsuite.leaderboard.results import add_submission, entry_id, list_entries, scan_entries
from evalsuite.leaderboard.submission import ModelInfo, Setting, SubmissionFile, SubmissionInfo
from evalsuite.leaderboard.verification.files import Limits
from evalsuite.leaderboard.verification.report import Problem, VerificationReport
from evalsuite.leaderboard.verify import verify_submission

__all__ = [
    "Limits",
    "ModelInfo",
    "Problem",
    "Setting",
    "SubmissionFile",
    "SubmissionInfo",
    "VerificationReport",
    "add_submission",
    "entry_id",
    "list_entries",
    "pack_submission",
    "scan_entries",
    "verify_submission",
]
