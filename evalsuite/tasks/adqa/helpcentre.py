"""Help-centre articles: generic explanations that share
vocabulary with every account passage (realistic distractors)."""

from __future__ import annotations

# (title, text). They state no fact about any entity of the knowledge base.
ARTICLES: tuple[tuple[str, str], ...] = (
    (
        "About campaign objectives",
        "A campaign objective tells the platform what result you want, such as online sales, lead "
        "generation, app installs, website traffic, brand awareness, store visits or video views. The "
        "objective decides which bidding strategies and ad formats are available to the campaign.",
    ),
    (
        "Set a daily budget",
        "The daily budget is the average amount a campaign may spend per day. On a given "
        "day the campaign can spend up to twice its daily budget, but over a month it never "
        "exceeds the daily budget multiplied by the average number of days in a month.",
    ),
    (
        "Standard and accelerated delivery",
        "With standard delivery the daily budget is spread evenly over the day. Accelerated delivery spends the budget "
        "as quickly as possible and may exhaust it early; it is only available to campaigns with manual bidding.",
    ),
    (
        "Campaign start and end dates",
        "A campaign starts serving on its start date at midnight in the account time zone. Changing the "
        "start date of a campaign that has already started is not possible; duplicate the campaign instead.",
    ),
    (
        "How ad groups work",
        "An ad group belongs to exactly one campaign and holds ads, a maximum CPC bid and an audience. "
        "Ad groups in the same campaign share the campaign budget and the campaign bidding strategy.",
    ),
    (
        "Maximum CPC bids in ad groups",
        "The maximum CPC bid of an ad group is the most you pay for a click when the campaign uses manual "
        "bidding. Automated bidding strategies ignore ad group bids unless a bid cap is set in the strategy.",
    ),
    (
        "Choose an ad format",
        "Ad groups can serve responsive display ads, single image ads, carousel ads, short video ads, text ads, "
        "shopping listings or stories. Each ad group serves one format, chosen when the ad group is created.",
    ),
    (
        "Device targeting",
        "Device targeting limits an ad group to all devices, mobile only, desktop only, "
        "or mobile and tablet. Device targeting is applied before the bid is computed.",
    ),
    (
        "About portfolio bidding strategies",
        "A portfolio bidding strategy is a named, shared bidding strategy that can be assigned to many campaigns. "
        "Every campaign assigned to the strategy follows its type, its bid cap and its learning period.",
    ),
    (
        "Target CPA bidding",
        "Target CPA (target cost per acquisition) sets bids to get as many conversions "
        "as possible at the target cost per conversion you choose. The strategy needs "
        "recent conversion history from the primary conversion event of each campaign.",
    ),
    (
        "Target ROAS bidding",
        "Target ROAS (target return on ad spend) bids to reach a return you set as a "
        "percentage, for example 400% for four dollars of conversion value per dollar "
        "spent. Conversion values must be reported for the primary conversion event.",
    ),
    (
        "Maximize Conversions and Maximize Conversion Value",
        "Maximize Conversions spends the full budget to get the most conversions; "
        "Maximize Conversion Value spends it to get the highest total conversion "
        "value. Neither takes a target, but both respect the bid cap of the strategy.",
    ),
    (
        "Manual CPC and Enhanced CPC",
        "With Manual CPC you set maximum CPC bids in each ad group. Enhanced CPC raises or lowers "
        "those manual bids automatically for clicks that seem more or less likely to convert.",
    ),
    (
        "Bid caps",
        "A bid cap is the highest bid an automated bidding strategy may place in any auction. A low bid cap can "
        "keep a strategy from spending its budget; a bid cap applies to every campaign that uses the strategy.",
    ),
    (
        "The learning period",
        "After a bidding strategy is created or changed it enters a learning period of several days while it "
        "calibrates. Performance can fluctuate during the learning period; avoid further changes until it ends.",
    ),
    (
        "About audiences",
        "An audience is a group of users that ad groups can target: website remarketing "
        "lists, lookalike audiences, customer lists, custom intent audiences and "
        "in-market audiences. One audience can be targeted by many ad groups.",
    ),
    (
        "Website remarketing audiences",
        "A website remarketing audience collects visitors recorded by a pixel on your site. "
        "Visitors stay in the audience for its membership duration after their last visit.",
    ),
    (
        "Lookalike audiences",
        "A lookalike audience finds new users who resemble the members of a source audience or the "
        "users recorded by a source pixel. Its estimated size depends on the countries it covers.",
    ),
    (
        "Membership duration",
        "The membership duration says how many days a user stays in an audience after qualifying. "
        "Longer durations build larger audiences; shorter durations keep them recent.",
    ),
    (
        "Estimated audience size",
        "The estimated size of an audience is the number of users it can reach in its locations, "
        "refreshed daily. Audiences smaller than one thousand users cannot be targeted.",
    ),
    (
        "Interest categories",
        "Custom intent and in-market audiences are described by interest categories such as outdoor "
        "sports, personal finance or travel deals. An audience is defined by a few interest categories.",
    ),
    (
        "Age ranges in audiences",
        "An audience can be limited to an age range such as 25-34. Advertising "
        "policies may require a minimum audience age for some industries.",
    ),
    (
        "Location targeting",
        "Campaigns and audiences list the countries where ads may be shown. When "
        "both are set, ads are shown only in the countries they have in common.",
    ),
    (
        "About conversion events",
        "A conversion event is an action you count as valuable, such as a purchase, a "
        "lead, a sign-up, an add to cart, a begin checkout, a subscription, an app install "
        "or a phone call. Each campaign optimizes for one primary conversion event.",
    ),
    (
        "Attribution windows",
        "The click-through attribution window is how many days after an ad click a conversion is still credited to the "
        "ad; the view-through window does the same after an ad view. Longer windows credit more conversions to ads.",
    ),
    (
        "Attribution models",
        "An attribution model decides how credit for a conversion is shared among ad clicks: "
        "last click, first click, linear, time decay, position-based or data-driven attribution.",
    ),
    (
        "Counting conversions",
        "Count every conversion for purchases, where each one has value; count one "
        "conversion per click for leads and sign-ups, where only the first one matters.",
    ),
    (
        "Conversion values",
        "A default conversion value is used when the pixel does not report a value with the "
        "conversion. Value-based bidding such as Target ROAS relies on conversion values.",
    ),
    (
        "About the pixel",
        "A pixel is a piece of code on your website that records visits and conversions. Each pixel "
        "has an ID of the form PX- followed by six digits and is owned by one advertiser account.",
    ),
    (
        "Pixel firing methods",
        "A pixel can fire through a JavaScript tag, an image pixel, a tag manager container or "
        "the server-side Conversions API. Server-side firing is not affected by browser blocking.",
    ),
    (
        "Verify a pixel installation",
        "Open the site on which the pixel is installed and check the pixel status in the "
        "events manager. A pixel created less than a day ago may show no activity yet.",
    ),
    (
        "Advertising policies by industry",
        "Advertisers in regulated industries such as financial services, healthcare, alcoholic beverages, online "
        "gambling, online dating, pharmacy and cryptocurrency fall under an industry policy with extra requirements.",
    ),
    (
        "Ad review times",
        "Most ads are reviewed within one business day. Industry policies can set "
        "longer review times and may require a certification before ads are approved.",
    ),
    (
        "Certifications for restricted industries",
        "Some advertising policies require a certification, such as a licence verification "
        "or a registration check, before the advertiser can run ads in that industry.",
    ),
    (
        "Account tiers and billing",
        "Accounts are self-serve, managed, agency-managed or enterprise. Billing is by monthly invoicing, "
        "credit card, prepaid balance or direct debit, and each account has a monthly spending limit.",
    ),
    (
        "Headquarters and account country",
        "The headquarters country of an advertiser sets the taxes shown on "
        "invoices. It does not restrict the countries a campaign can target.",
    ),
    (
        "Troubleshoot a campaign that does not spend",
        "Check the daily budget, the bid cap of the bidding strategy, the size of the targeted "
        "audiences and whether the primary conversion event has recorded conversions recently.",
    ),
    (
        "Troubleshoot missing conversions",
        "Check that the pixel recording the conversion event fires on the confirmation page, that its "
        "firing method is not blocked, and that the attribution window is long enough for your sales cycle.",
    ),
)
