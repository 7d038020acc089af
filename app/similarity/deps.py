"""Typed dependency: the similarity service, built per request on what the lifespan opened."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.core.deps import SessionsDep
from app.similarity.service import SimilarityService


def get_similarity_service(sessions: SessionsDep) -> SimilarityService:
    return SimilarityService(sessions)


SimilarityServiceDep = Annotated[SimilarityService, Depends(get_similarity_service)]
