"""The base class of every sharing strategy: one module that owns both the input embedding and the
output layer, so that strategies which change both sides (l2norm, nGPT) stay one object."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.schema import Setting
from embtie.sharing.capabilities import VocabularyTables
from embtie.sharing.head import Head
from embtie.sharing.inputs import check_hidden, check_ids
from embtie.sharing.loss import cross_entropy
from embtie.sharing.softcap import CapShape, SoftcapForm
from embtie.sharing.step_call import check_step_call


@dataclass(frozen=True)
class LogitMoments:
    """Analytic step-0 logit statistics of the bigram model h = RMSNorm(embed(i)) (Su 2023).

    ``diag``: the logit of the input token itself, z_i (mean and variance over i).
    ``off``: the logit of any other token, z_k with k != i (mean and variance).
    """

    diag_mean: float
    diag_var: float
    off_mean: float
    off_var: float

    def scaled(self, s: float) -> LogitMoments:
        return LogitMoments(self.diag_mean * s, self.diag_var * s * s, self.off_mean * s, self.off_var * s * s)


EmbedScale = Literal["sqrt_d"]
"""the word values of option ``embed_scale`` (besides a number)."""
LogitScale = Literal["inv_sqrt_d", "learned"]
"""the word values of option ``logit_scale`` (besides a number)."""
InitStd = Literal["inv_sqrt_d", "log_v_over_d"]
"""the word values of option ``init_std`` (besides a number)."""


class SharingStrategy(VocabularyTables):
    """Input embedding + output layer of a text-generation model.

    Subclasses define ``_output_core`` (the output matrix, per-row scale and structural bias) and
    may override ``_input_rows`` (how embedding rows become input vectors) and ``transform`` (a map
    applied to the hidden state before the output layer).

    Common options (``declared_options``; all default to "off", so each strategy computes exactly its
    formula): bias, embed_scale, logit_scale (+ logit_scale_init, logit_scale_lr), softcap, init_std or
    init_range, factor_rank, z_loss, token_temperature; ``embtie config --strategy NAME`` prints them with
    their ranges. Notes the one-line declarations leave out:
        logit_scale_lr: Adam moves a scalar by about lr per step whatever its gradient; on ptb-gpt-tiny a
            fixed head's scale did not grow faster with 10x or 30x (docs/fixed-head.md), so it stays 1.
        factor_rank: the formula applies to the rows of A B (``embedding_matrix``); A gets the init of E,
            B ~ N(0, 1/r), so that the entries of A B have the variance of an unfactorized E.
        token_temperature: z_i = cap(s tau_i r_i (w_i . x) + b_i).
    """

    name: ClassVar[str] = ""
    formula: ClassVar[str] = ""
    source: ClassVar[str] = ""
    flat_table: ClassVar[bool] = True
    """The strategy keeps one (V, d) table E at ``.weight`` (False: e.g. adaptive's per-cluster tables),
    which ``embtie.hf`` (copying a pretrained matrix in and out) and the flat-formula tests need."""
    zero_head_refusal: ClassVar[str] = (
        "has no separate head: its output matrix is the input table E, and a zero E would zero every input vector too"
    )
    """Why option ``zero_head`` is refused (the rest of the sentence after the strategy's name); empty for a
    strategy with a separate learned head O, which then starts at zero."""
    needs_frequency_sorted_vocab: ClassVar[bool] = False
    """True when token ids must be ordered by decreasing training frequency (adaptive clusters)."""

    declared_options: ClassVar[dict[str, Setting]] = {
        "bias": Setting("a learned output bias b (V,), initialised to zero"),
        "embed_scale": Setting(
            "multiply input vectors by this number; sqrt_d: by sqrt(dim) (fairseq, Gemma)", gt=0, null="no scaling"
        ),
        "logit_scale": Setting(
            "multiply logits by this number; inv_sqrt_d: by dim**-0.5 (tied T5); learned: by a learned scalar "
            "starting at logit_scale_init (Hoffer et al.)",
            gt=0,
            null="no scaling",
        ),
        "logit_scale_init": Setting("the learned logit scale's initial value (logit_scale=learned)", gt=0),
        "logit_scale_lr": Setting(
            "the learned logit scale's learning rate as a multiple of train.lr (needs logit_scale=learned)", gt=0
        ),
        "softcap": Setting("c in z <- c tanh(z / c) (Gemma 2, modded-nanogpt)", gt=0, null="no cap"),
        "softcap_form": Setting(
            "tanh: z <- c tanh(z / c); sigmoid: z <- c sigmoid((z + softcap_shift) / softcap_scale) "
            "(modded-nanogpt); needs softcap"
        ),
        "softcap_scale": Setting("s of the sigmoid cap (softcap_form=sigmoid)", gt=0, null="softcap / 4 (slope 1)"),
        "softcap_shift": Setting("b of the sigmoid cap (softcap_form=sigmoid)"),
        "init_std": Setting(
            "std of the normal init of E (and of learned matrices of its shape); inv_sqrt_d: dim**-0.5; "
            "log_v_over_d: ln(V)/dim (Su 2023)",
            gt=0,
            null="dim**-0.5",
        ),
        "init_range": Setting(
            "instead of init_std, initialise uniformly in [-a, a] (Zaremba et al., Press & Wolf)",
            gt=0,
            null="init_std decides",
        ),
        "factor_rank": Setting(
            "r, to learn E = A B with A (V, r), B (r, d) (ALBERT); at most the model width",
            ge=1,
            null="no factorization",
        ),
        "z_loss": Setting("lambda of the z-loss lambda log^2 Z per token, averaged like the loss (PaLM); 0: off", ge=0),
        "token_temperature": Setting(
            "a learned per-token logit multiplier tau (V,), initialised to 1, as nGPT's s (for normalized heads)"
        ),
        "zero_head": Setting(
            "initialise a separate learned head O to zero, so every logit is 0 and the loss is ln V at step 0 "
            "(modded-nanogpt); strategies whose head is E, normalised rows of E or fixed refuse it"
        ),
    }
    """meaning and range of the options of this class's constructor (their type and default are its
    signature's); a subclass declares the options its own constructor adds (``embtie.sharing.registry``)."""

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        bias: bool = False,
        embed_scale: float | EmbedScale | None = None,
        logit_scale: float | LogitScale | None = None,
        logit_scale_init: float = 1.0,
        logit_scale_lr: float = 1.0,
        softcap: float | None = None,
        softcap_form: SoftcapForm = "tanh",
        softcap_scale: float | None = None,
        softcap_shift: float = 0.0,
        init_std: float | InitStd | None = None,
        init_range: float | None = None,
        factor_rank: int | None = None,
        z_loss: float = 0.0,
        token_temperature: bool = False,
        zero_head: bool = False,
    ) -> None:
        """Options arrive checked by their declarations (``sharing.build``); rules that involve ``dim`` or
        several options are checked here."""
        super().__init__()
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
            raise ConfigError(f"vocab_size={vocab_size!r} must be an integer >= 2")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"dim={dim!r} must be an integer >= 1")
        self.step_hook_ran = False
        """whether a loop has called ``on_train_step`` (``needs_step_hook``)."""
        self.vocab_size = vocab_size
        self.dim = dim
        if zero_head and self.zero_head_refusal:
            raise ConfigError(
                f"option zero_head: strategy {self.name!r} {self.zero_head_refusal}; use a strategy with a "
                "separate learned head (untied)"
            )
        self.zero_head = bool(zero_head)
        """O starts at zero (only strategies with an empty ``zero_head_refusal`` accept it)."""
        self.embed_scale = (
            1.0 if embed_scale is None else math.sqrt(dim) if embed_scale == "sqrt_d" else float(embed_scale)
        )
        self.softcap = None if softcap is None else float(softcap)
        self.cap_shape = _cap_shape(self.softcap, softcap_form, softcap_scale, softcap_shift)
        self.init_std, self.init_range = self._resolve_init(init_std, init_range)

        self.factor_rank = self._resolve_rank(factor_rank)
        self.z_loss = float(z_loss)
        self.weight = nn.Parameter(torch.empty(vocab_size, self.factor_rank or dim))
        """(V, d) the learned E; (V, r) the factor A when ``factor_rank`` is set."""
        self.factor_b = nn.Parameter(torch.empty(self.factor_rank, dim)) if self.factor_rank else None
        self.temperature = nn.Parameter(torch.ones(vocab_size)) if token_temperature else None
        self.bias: nn.Parameter | None
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self._drawn: dict[str, Tensor] = {}
        """copies of the child modules' parameters as ``reset_parameters`` drew them (``_remember_init``)."""
        self._fixed_logit_scale: float | None = None
        self.logit_scale_param: nn.Parameter | None = None
        self._logit_scale_lr = float(logit_scale_lr)
        if logit_scale != "learned" and self._logit_scale_lr != 1.0:
            raise ConfigError(f"option logit_scale_lr={self._logit_scale_lr:g} needs logit_scale=learned")
        if logit_scale == "learned":
            self.logit_scale_param = nn.Parameter(torch.tensor(float(logit_scale_init)))
        elif logit_scale == "inv_sqrt_d":
            self._fixed_logit_scale = dim**-0.5
        elif logit_scale is not None:
            self._fixed_logit_scale = float(logit_scale)

    # ------------------------------------------------------------------ options
    def _resolve_rank(self, rank: int | None) -> int | None:
        if rank is not None and rank > self.dim:
            raise ConfigError(f"option factor_rank={rank!r} must be an integer in [1, dim={self.dim}]")
        return rank

    def _resolve_init(self, init_std: float | str | None, init_range: float | None) -> tuple[float, float | None]:
        if init_range is not None:
            if init_std is not None:
                raise ConfigError("options init_std and init_range exclude each other; give only one")
            return float(init_range) / math.sqrt(3.0), float(init_range)
        if init_std is None or init_std == "inv_sqrt_d":
            return self.dim**-0.5, None
        if init_std == "log_v_over_d":
            return math.log(self.vocab_size) / self.dim, None
        return float(init_std), None

    def init_(self, tensor: Tensor) -> Tensor:
        """Initialise a learned tensor with this strategy's init (normal init_std or uniform init_range)."""
        with torch.no_grad():
            if self.init_range is not None:
                return tensor.uniform_(-self.init_range, self.init_range)
            return tensor.normal_(0.0, self.init_std)

    def reset_parameters(self) -> None:
        """Re-draw every learned tensor (fixed buffers are drawn once, in the constructor)."""
        self.init_(self.weight)
        if self.factor_b is not None and self.factor_rank is not None:  # both set together
            nn.init.normal_(self.factor_b, 0.0, self.factor_rank**-0.5)
        if self.temperature is not None:
            nn.init.ones_(self.temperature)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def _remember_init(self) -> None:
        """Keep a copy of the parameters of the strategy's child modules (tied-proj's P, tied-bert's dense
        layer, a fixed head's target_dim map) as its ``reset_parameters`` just drew them: a host model's own
        init (``model.apply(_init_weights)``) re-draws every ``nn.Linear`` it reaches, and the first
        ``on_train_step`` compares them once (``_check_init``). Subclasses with child modules call this at
        the end of their ``reset_parameters``."""
        children = {name for name, _ in self.named_children()}
        self._drawn = {n: p.detach().clone() for n, p in self.named_parameters() if n.split(".")[0] in children}

    def _check_init(self) -> None:
        """Warn (once: the copies are dropped) when a child module's parameters no longer hold the strategy's
        init before the first optimizer step. Loading a state dict drops the copies (loaded weights are meant)."""
        drawn, self._drawn = self._drawn, {}
        if not drawn or torch.compiler.is_compiling():
            return
        changed = [
            n
            for n, p in self.named_parameters()
            if n in drawn and p.shape == drawn[n].shape and not torch.equal(p.detach(), drawn[n].to(p.device, p.dtype))
        ]
        if changed:
            warnings.warn(
                f"strategy {self.name!r}: the init it drew for {', '.join(changed)} was re-drawn before the first "
                "step (by a host model's init of every nn.Linear?); call model.sharing.reset_parameters() after "
                "your own init, or skip the strategy's modules in it",
                stacklevel=3,
            )

    def on_train_step(self, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None) -> None:
        """The one call a training loop makes before every optimizer step ``step`` (0-based) of
        ``total_steps`` (embtie's trainer does; so must a user's own loop, docs/your-loop.md): it runs the
        strategy's per-step hooks (tie-untie's switch, which copies E's state in ``optimizer``) and, at the
        first call, checks that a host's init left the strategy's own init in place (``_check_init``). A step
        outside [0, total_steps), total_steps < 1, or an optimizer that does not update the strategy (none, for
        a strategy whose switch carries optimizer state) is a one-line ConfigError (``step_call``)."""
        check_step_call(self, self.name, step, total_steps, optimizer, self.needs_step_hook)
        self.step_hook_ran = True
        self._check_init()

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._drawn = {}

    # ------------------------------------------------------------------ input side
    def _input_rows(self, rows: Tensor) -> Tensor:
        """(..., d) raw embedding rows -> (..., d) input vectors (before embed_scale)."""
        return rows

    def embed(self, ids: Tensor) -> Tensor:
        """(...,) long token ids -> (..., d) vectors fed into the model. Ids of another dtype or device, or
        (on the CPU, elsewhere with ``inputs.CHECK_RANGES_ON_DEVICE``) outside [0, V), are a one-line error."""
        ids = check_ids(ids, self.vocab_size, self.weight.device)
        rows = F.embedding(ids, self.weight)
        x = self._input_rows(rows if self.factor_b is None else rows @ self.factor_b)
        return x * self.embed_scale if self.embed_scale != 1.0 else x

    def embedding_matrix(self) -> Tensor:
        """(V, d) the raw embedding rows E: ``weight``, or A B when factorized."""
        return self.weight if self.factor_b is None else self.weight @ self.factor_b

    def input_vectors(self) -> Tensor:
        """(V, d) the effective input vector of every token (after normalization and embed_scale)."""
        x = self._input_rows(self.embedding_matrix())
        return x * self.embed_scale if self.embed_scale != 1.0 else x

    # ------------------------------------------------------------------ output side
    @property
    def target_dim(self) -> int:
        """d_t, the width of the vectors the logits are taken against."""
        return self.dim

    def transform(self, h: Tensor) -> Tensor:
        """(..., d) hidden states -> (..., d_t) what the output matrix is applied to."""
        return h

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """(W (V, d_t), per-row scale (V,) or None, structural bias (V,) or None) before logit_scale."""
        raise NotImplementedError

    norm_power: ClassVar[float | None] = None
    """p when the output rows are also scaled by ||w_i||^p (the per-row scale of ``_output_core``
    is then only the remaining factor); see ``Head.norm_power``."""
    sqnorm_bias: ClassVar[float | None] = None
    """c when the logits have the structural bias c ||w_i||^2 (before logit_scale); see ``Head.sqnorm_bias``."""

    def lr_multipliers(self) -> dict[str, float]:
        """The learned logit scale's own learning rate (option ``logit_scale_lr``), when it has one."""
        if self.logit_scale_param is not None and self._logit_scale_lr != 1.0:
            return {"logit_scale_param": self._logit_scale_lr}
        return {}

    def separate_output_weight(self) -> nn.Parameter | None:
        """The learned output matrix O when the strategy keeps one apart from E (untied, tie-untie), else
        None; ``embtie.hf`` copies a model's output layer into it."""
        return None

    def head_tables(self) -> list[nn.Parameter]:
        """The separate learned output matrix O, when the strategy keeps one (``separate_output_weight``)."""
        out = self.separate_output_weight()
        return [] if out is None else [out]

    def logit_scale(self) -> Tensor | float | None:
        """The scalar logit scale s (a 0-d tensor when learned), or None."""
        if self.logit_scale_param is not None:
            return self.logit_scale_param
        return self._fixed_logit_scale

    def head(self) -> Head:
        """The output layer of this step in canonical form (see ``embtie.sharing.head``)."""
        w, row_scale, struct_bias = self._output_core()
        s = self.logit_scale()
        b = struct_bias
        if b is not None and s is not None:
            b = b * s
        c: Tensor | float | None = self.sqnorm_bias
        if c is not None and s is not None:
            c = s * c
        if self.bias is not None:
            b = self.bias if b is None else b + self.bias
        if self.temperature is not None:
            row_scale = self.temperature if row_scale is None else row_scale * self.temperature
        return Head(
            weight=w,
            factor=self.factor_b if w is self.weight else None,  # E's factor; a separate O or T is whole
            z_loss=self.z_loss,
            row_scale=row_scale,
            norm_power=self.norm_power,
            bias=b,
            sqnorm_bias=c,
            scale=s,
            softcap=self.softcap,
            cap_shape=self.cap_shape,
        )

    def _weights_device(self) -> torch.device:
        """The device of the strategy's own weights (every input must be there): of its first own parameter
        (a dict lookup, not ``parameters()``, which costs microseconds per call on the hot path)."""
        for p in self._parameters.values():
            if p is not None:
                return p.device
        for q in self.parameters():
            return q.device
        return torch.device("cpu")

    def _weights_dtype(self) -> torch.dtype | None:
        """The floating dtype of the strategy's first own floating parameter (None when it has none)."""
        for p in self._parameters.values():
            if p is not None and p.is_floating_point():
                return p.dtype
        for q in self.parameters():
            if q.is_floating_point():
                return q.dtype
        return None

    def _check_width(self, h: Tensor) -> None:
        """Hidden states at the boundary: floating point, ending in ``dim``, on the weights' device, of the
        weights' dtype outside autocast (one-line ``inputs.InputTypeError`` / ``InputValueError``; no host
        sync)."""
        check_hidden(h, self.dim, self._weights_device(), self._weights_dtype())

    def logits(self, h: Tensor) -> Tensor:
        """(..., d) hidden states -> (..., V) logits."""
        self._check_width(h)
        return self.head().logits(self.transform(h))

    def log_probs(self, h: Tensor) -> Tensor:
        """(..., d) hidden states -> (..., V) log p(w | h), in at least float32 (the full distribution)."""
        z = self.logits(h)
        return torch.log_softmax(z.to(torch.promote_types(z.dtype, torch.float32)), dim=-1)

    def loss(
        self,
        h: Tensor,
        targets: Tensor,
        ignore_index: int = -100,
        label_smoothing: float = 0.0,
        *,
        impl: str | None = None,
        chunk_size: int | None = None,
    ) -> Tensor:
        """Mean cross-entropy over kept tokens. h: (..., d); targets: (...,) long. Returns a scalar.

        ``impl``/``chunk_size``: see ``embtie.sharing.loss.cross_entropy`` (default: the memory-lean
        chunked loss, which never holds the (..., V) logits).
        """
        self._check_width(h)
        return cross_entropy(
            self.head(),
            self.transform(h),
            targets,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
            impl=impl,
            chunk_size=chunk_size,
        )

    def output_vectors(self) -> Tensor:
        """(V, d_t) the effective target vectors (all scales folded in)."""
        return self.head().effective_weight()

    def regularization(self) -> Tensor:
        """Scalar added to the training loss (zero for strategies without a regulariser)."""
        return self.weight.new_zeros(())

    # ------------------------------------------------------------------ bookkeeping
    def parameter_counts(self) -> dict[str, int]:
        """{"learned": elements of trainable parameters, "fixed": elements of fixed buffers}."""
        learned = sum(p.numel() for p in self.parameters() if p.requires_grad)
        fixed = sum(b.numel() for b in self.buffers())
        return {"learned": learned, "fixed": fixed}

    def step0_moments(self) -> LogitMoments:
        """Analytic step-0 logit moments of the bigram model h = RMSNorm(embed(i)), ||h||^2 = d.

        Subclasses give the moments of their formula; logit_scale is applied here. softcap and the
        learned bias (zero at init) are not part of the prediction.
        """
        m = self._step0_moments()
        s = self.logit_scale()
        if s is not None:
            m = m.scaled(float(s.detach()) if isinstance(s, Tensor) else float(s))
        return m

    def _step0_moments(self) -> LogitMoments:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"name={self.name!r}, vocab_size={self.vocab_size}, dim={self.dim}, target_dim={self.target_dim}"


def _cap_shape(cap: float | None, form: SoftcapForm, scale: float | None, shift: float) -> CapShape:
    """The soft-cap's shape from the options; a ConfigError for a form or sigmoid setting without its cap."""
    if form != "tanh" and cap is None:
        raise ConfigError(f"option softcap_form={form} needs softcap, the cap's height c (e.g. softcap=30)")
    if form != "sigmoid" and (scale is not None or shift):
        raise ConfigError("options softcap_scale and softcap_shift shape the sigmoid cap; set softcap_form=sigmoid")
    return CapShape(form, None if scale is None else float(scale), float(shift))


def strategy_of(model: nn.Module) -> SharingStrategy:
    """The sharing strategy an embtie model holds as ``model.sharing`` (every task's model does)."""
    strategy = model.get_submodule("sharing")
    if not isinstance(strategy, SharingStrategy):
        raise TypeError(f"{type(model).__name__}.sharing is a {type(strategy).__name__}, not a sharing strategy")
    return strategy
