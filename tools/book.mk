# tools/book.mk: plots and the book. Included by the top-level Makefile.
#
#   make plots       build/plots/stage-NN.{svg,png} from your results when
#                    build/results/stage-NN.csv exists, else from the reference;
#                    build/plots/stage-NN-reference.{svg,png} always
#   make book        build/book/book.{html,epub,pdf}
#   make book EDITION=student
#                    build/book-student/book.{html,epub,pdf}: every listing that
#                    holds a task's solution shows the kits' stub instead, and
#                    the HTML and EPUB are checked to hold no answer
#   make check-book  run the filter over book.md and its chapters (fast, no
#                    plots), check the student edition holds no answer, and
#                    that the results the book quotes come from its compiler,
#                    from one run of make reference on one machine, and are
#                    not stale (STRICT=1: each an error, else listed); print
#                    each chapter's prose words (fenced and
#                    indented code left out) and fail above 6,000
#
# Chapter order is the `chapters:` list in book.md's YAML metadata.

BUILD ?= build
PANDOC ?= pandoc

EDITION ?= reader
ifeq ($(EDITION),student)
BOOK_DIR        := $(BUILD)/book-student
BOOK_EDITION    := -M book-edition=student
# Proves the file just written holds no task's answer; removes it if it does.
BOOK_NO_ANSWERS  = python3 tools/kit-check.py --book $@ || { rm -f $@; exit 1; }
# The PDF's text is not read back: the HTML weasyprint is given is checked.
BOOK_PDF_SOURCE  = $(BOOK_PANDOC) -t html5 -s -M plots-format=png -o $(BOOK_DIR)/book-pdf.html \
                   book.md $$chapters && python3 tools/kit-check.py --book $(BOOK_DIR)/book-pdf.html
else ifeq ($(EDITION),reader)
BOOK_DIR        := $(BUILD)/book
BOOK_EDITION    :=
BOOK_NO_ANSWERS  = :
BOOK_PDF_SOURCE  = :
else
$(error EDITION must be reader or student, not '$(EDITION)')
endif
BOOK_PLOT_DIR   := $(BUILD)/plots
BOOK_RESULTS    := $(BUILD)/results
BOOK_REF_CSVS   := $(sort $(wildcard plots/data/stage-[0-9][0-9].csv))
# The GFLOPS plots are drawn from the GEMM benches' results; a stage with
# columns of its own (stage 06's training steps) is drawn as a study below.
BOOK_GEMM_CSVS  := $(foreach f,$(BOOK_REF_CSVS),$(if $(shell grep -q '^kernel,isa,' $(f) && echo y),$(f)))
BOOK_PLOT_STAMP := $(BOOK_PLOT_DIR)/.stamp
BOOK_TOOLS      := tools/book.lua tools/sections.lua tools/book.css tools/check-book.sh tools/make_assignment.py \
                   tools/answers.py tools/kit-check.py
BOOK_DEPS       := book.md $(wildcard chapters/*.md) $(BOOK_TOOLS) $(BOOK_REF_CSVS) \
                   $(wildcard $(BOOK_RESULTS)/*.csv) $(wildcard plots/data/*.dot plots/data/*.txt) \
                   $(wildcard common/*/*.[ch] \
                   stages/*/*.[ch] stages/*/Makefile stages/*/*.mk plots/*.gp tests/test_*.c) \
                   $(BOOK_PLOT_STAMP)

# Common pandoc options; run from the repository root.
BOOK_PANDOC := $(PANDOC) -f markdown --resource-path=. --lua-filter=tools/book.lua --lua-filter=tools/sections.lua \
               --toc --toc-depth=2 --highlight-style=tango \
               --css=tools/book.css $(BOOK_EDITION)
BOOK_CHAPTERS = tools/check-book.sh --chapters book.md

.PHONY: plots book book-html book-epub book-pdf check-book _book_force

# --- plots -------------------------------------------------------------------
# Always visited; a plot is redrawn only when its source CSV, the plotting
# scripts, or the choice of source (yours or the reference) changed. The
# stamp is touched only then, so the book is rebuilt only when needed.
plots: $(BOOK_PLOT_STAMP)

$(BOOK_PLOT_STAMP): _book_force
	@mkdir -p $(BOOK_PLOT_DIR)
	@changed=0; \
	draw() { \
	  src=$$1; out=$$2; what=$$3; \
	  tools/merge-results.sh "$$src" > "$$out.new.csv" || return 1; \
	  if [ -f "$$out.svg" ] && [ -f "$$out.png" ] && [ -f "$$out.csv" ] && \
	     cmp -s "$$out.new.csv" "$$out.csv" && \
	     [ ! tools/plot.sh -nt "$$out.png" ] && [ ! tools/plot-lib.sh -nt "$$out.png" ] && \
	     [ ! plots/gflops.gp -nt "$$out.png" ]; then \
	    rm -f "$$out.new.csv"; \
	    echo "plots: $$out.svg is up to date ($$what: $$src)"; \
	    return 0; \
	  fi; \
	  mv "$$out.new.csv" "$$out.csv"; \
	  echo "plots: $$out.{svg,png} <- $$src and earlier stages' kernels ($$what)"; \
	  tools/plot.sh "$$out.csv" "$$out" "($$what)" || return 1; \
	  changed=1; \
	}; \
	study() { \
	  name=$$1; tool=$$2; src=$(BOOK_RESULTS)/$$name.csv; \
	  [ -f "$$src" ] || src=plots/data/$$name.csv; \
	  [ -f "$$src" ] || return 0; \
	  out=$(BOOK_PLOT_DIR)/$$name; \
	  if [ -f "$$out.svg" ] && [ ! "$$src" -nt "$$out.svg" ] && [ ! "$$tool" -nt "$$out.svg" ] && \
	     [ ! tools/plot-lib.sh -nt "$$out.svg" ]; then return 0; fi; \
	  $$tool "$$src" "$$out" >/dev/null || return 1; \
	  echo "plots: $$out.{svg,png} <- $$src"; changed=1; \
	}; \
	study stage-02-sweep tools/sweep-plot.sh || exit 1; \
	study stage-04-staircase tools/plot.sh || exit 1; \
	study stage-05-scaling tools/scaling-plot.sh || exit 1; \
	study stage-05-paths tools/paths-plot.sh || exit 1; \
	study stage-05-strassen tools/strassen-plot.sh || exit 1; \
	study stage-05-preload tools/preload-plot.sh || exit 1; \
	study stage-06 tools/autograd-plot.sh || exit 1; \
	study stage-06-spirals tools/spirals-plot.sh || exit 1; \
	study stage-06-boundary tools/spirals-plot.sh || exit 1; \
	for name in stage-07-val stage-07-seeds stage-07-confusion stage-07-wrong stage-07-templates \
	            stage-08-filters stage-08-maps stage-08-confusion; do \
	  study $$name tools/inspect-plot.sh || exit 1; done; \
	for name in stage-06-tape stage-09-graph; do \
	  tool=tools/tape-plot.sh; out=$(BOOK_PLOT_DIR)/$$name; \
	  dot=$(BOOK_RESULTS)/$$name.dot; [ -f "$$dot" ] || dot=plots/data/$$name.dot; \
	  if [ -f "$$dot" ] && { [ ! -f $$out.svg ] || [ "$$dot" -nt $$out.svg ] || [ $$tool -nt $$out.svg ] || \
	       [ tools/plot-lib.sh -nt $$out.svg ]; }; then \
	    $$tool "$$dot" $$out >/dev/null || exit 1; \
	    echo "plots: $$out.{svg,png} <- $$dot"; changed=1; fi; \
	done; \
	study stage-07-lifetimes tools/lifetime-plot.sh || exit 1; \
	study stage-08-lifetimes tools/lifetime-plot.sh || exit 1; \
	mlp() { \
	  srcs=$$(ls $(BOOK_RESULTS)/stage-07*.csv plots/data/stage-07*.csv 2>/dev/null); \
	  [ -n "$$srcs" ] || return 0; \
	  out=$(BOOK_PLOT_DIR)/stage-07; \
	  if [ -f "$$out.stamp" ] && [ -z "$$(find $$srcs tools/mlp-plot.sh tools/plot-lib.sh -newer $$out.stamp)" ]; then return 0; fi; \
	  tools/mlp-plot.sh $(BOOK_RESULTS)/stage-07.csv "$$out" >/dev/null || return 1; \
	  touch "$$out.stamp"; echo "plots: $$out*.{svg,png} <- stage-07 results"; changed=1; \
	}; \
	mlp || exit 1; \
	cnn() { \
	  srcs=$$(ls $(BOOK_RESULTS)/stage-08*.csv plots/data/stage-08*.csv 2>/dev/null); \
	  [ -n "$$srcs" ] || return 0; \
	  out=$(BOOK_PLOT_DIR)/stage-08; \
	  if [ -f "$$out.stamp" ] && [ -z "$$(find $$srcs tools/cnn-plot.sh tools/plot-lib.sh -newer $$out.stamp)" ]; then return 0; fi; \
	  tools/cnn-plot.sh $(BOOK_RESULTS)/stage-08.csv "$$out" >/dev/null || return 1; \
	  touch "$$out.stamp"; echo "plots: $$out*.{svg,png} <- stage-08 results"; changed=1; \
	}; \
	cnn || exit 1; \
	compiled() { \
	  srcs=$$(ls $(BOOK_RESULTS)/stage-09*.csv plots/data/stage-09*.csv 2>/dev/null); \
	  [ -n "$$srcs" ] || return 0; \
	  out=$(BOOK_PLOT_DIR)/stage-09; \
	  if [ -f "$$out.stamp" ] && [ -z "$$(find $$srcs tools/compile-plot.sh tools/plot-lib.sh -newer $$out.stamp)" ]; then return 0; fi; \
	  tools/compile-plot.sh $(BOOK_RESULTS)/stage-09.csv "$$out" >/dev/null || return 1; \
	  touch "$$out.stamp"; echo "plots: $$out*.{svg,png} <- stage-09 results"; changed=1; \
	}; \
	compiled || exit 1; \
	for ref in $(BOOK_GEMM_CSVS); do \
	  s=$$(basename "$$ref" .csv); mine=$(BOOK_RESULTS)/$$s.csv; \
	  if [ -f "$$mine" ]; then \
	    draw "$$mine" $(BOOK_PLOT_DIR)/$$s "your machine" || exit 1; \
	  else \
	    draw "$$ref" $(BOOK_PLOT_DIR)/$$s "reference machine" || exit 1; \
	  fi; \
	  draw "$$ref" $(BOOK_PLOT_DIR)/$$s-reference "reference machine" || exit 1; \
	done; \
	if [ $$changed = 1 ] || [ ! -f $@ ]; then touch $@; fi

_book_force:

# --- the book ----------------------------------------------------------------
book: $(BOOK_DIR)/book.html $(BOOK_DIR)/book.epub $(BOOK_DIR)/book.pdf
	@echo "book: $(BOOK_DIR)/book.html $(BOOK_DIR)/book.epub $(BOOK_DIR)/book.pdf"

book-html: $(BOOK_DIR)/book.html
book-epub: $(BOOK_DIR)/book.epub
book-pdf: $(BOOK_DIR)/book.pdf

$(BOOK_DIR)/book.html: $(BOOK_DEPS)
	@mkdir -p $(@D)
	@chapters=$$($(BOOK_CHAPTERS)) || exit 1; \
	echo "pandoc -> $@"; \
	$(BOOK_PANDOC) -t html5 --self-contained -o $@ book.md $$chapters \
	  || { rm -f $@; exit 1; }
	@$(BOOK_NO_ANSWERS)

$(BOOK_DIR)/book.epub: $(BOOK_DEPS)
	@mkdir -p $(@D)
	@chapters=$$($(BOOK_CHAPTERS)) || exit 1; \
	echo "pandoc -> $@"; \
	$(BOOK_PANDOC) -t epub3 --epub-chapter-level=1 -o $@ book.md $$chapters \
	  || { rm -f $@; exit 1; }
	@$(BOOK_NO_ANSWERS)

# weasyprint 57 cannot read gnuplot's SVG: the PDF uses the PNG plots.
$(BOOK_DIR)/book.pdf: $(BOOK_DEPS)
	@mkdir -p $(@D)
	@chapters=$$($(BOOK_CHAPTERS)) || exit 1; \
	echo "pandoc -> $@ (weasyprint)"; \
	$(BOOK_PDF_SOURCE) || exit 1; \
	$(BOOK_PANDOC) -t html5 --pdf-engine=weasyprint -M plots-format=png \
	  -o $@ book.md $$chapters 2> $(BOOK_DIR)/pdf.log; \
	status=$$?; \
	grep -v -E '^WARNING: (Ignored|Expected a media type|Invalid media type)' \
	  $(BOOK_DIR)/pdf.log >&2 || true; \
	if [ $$status -ne 0 ]; then rm -f $@; exit $$status; fi

# --- checks ------------------------------------------------------------------
check-book:
	@tools/check-book.sh --book book.md
	@tools/check-book.sh --student book.md
	@tools/check-book.sh --provenance book.md
	@echo "prose words (code blocks left out):"
	@tools/check-book.sh --words book.md
