"""The page path (one watermarked page of a link, in named stages) and the mark's key.
Room pages come in through a resolver the composition root passes in."""
