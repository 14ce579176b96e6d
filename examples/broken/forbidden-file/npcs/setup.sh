echo "Packs are data, not code. This file must be refused."
